// Package solverinput gathers, through the API, what the solver needs
// besides the pods, nodes and NodePools that pkg/state already holds, so
// provisioning, disruption's consolidation what-ifs and (from manifests
// instead of the API) `karp simulate` give pkg/simulation the same input:
//
//   - Cluster: the LimitRanges (default requests) and Namespaces (pod
//     affinity namespace selectors); Launchable: which NodePools may launch.
//   - VolumeTerms: where a pod's volumes let it run: a bound
//     PersistentVolume's node affinity (a zonal disk keeps its pod in its
//     zone) or, for an unbound claim of a WaitForFirstConsumer StorageClass,
//     the class's allowedTopologies. Callers decide what a missing claim,
//     volume or class means for them: every lookup error wraps the API
//     error, so apierrors.IsNotFound tells a missing object from a failed
//     read.
//   - FillVolumeLimits (through the API) and ApplyVolumeLimits (given the
//     CSINodes and VolumeObjects, as `karp simulate` reads them from the
//     manifests): each registered node's CSI volume attach limits from its
//     CSINode (spec.drivers[].allocatable.count) and, for the pods the
//     solver places or counts, the claims they attach by CSI driver (a bound
//     claim's PersistentVolume names the driver, an unbound one its
//     StorageClass's provisioner; in-tree plugins count as the CSI drivers
//     they migrated to). A claim, volume or class that is gone makes the
//     claim count for no driver, as upstream; other read errors are
//     returned.
//   - DefaultSpread: for pods that declare no topology spread, the
//     scheduler's default constraints (--scheduler-config) with the label
//     selector kube-scheduler deduces from the Services that select the pod
//     and its ReplicationController, ReplicaSet or StatefulSet owner. It
//     never writes to a pod.
//
// The lookups live here; turning the objects into requirements, limits and
// selectors is pure code in pkg/scheduling and pkg/simulation
// (PersistentVolumeTerms, StorageClassTerms, CombineVolumeTerms,
// ClaimDriver, CSINodeLimits, DefaultSpreadSelector).
package solverinput
