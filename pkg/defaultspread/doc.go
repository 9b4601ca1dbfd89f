// Package defaultspread gathers what the solver needs to apply the
// scheduler's default topology spread constraints (--scheduler-config) to
// pods that declare none: for each such pod, the label selector
// kube-scheduler deduces from the Services that select it and its
// ReplicationController, ReplicaSet or StatefulSet owner. Provisioning
// gathers it for pending pods and disruption for the pods a consolidation
// would move, so both simulate what the scheduler will do. It reads; it
// decides nothing (the deduction is scheduling.DefaultSpreadSelector) and
// never writes to a pod.
package defaultspread
