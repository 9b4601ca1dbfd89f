// Package state is karp's in-memory view of the cluster: Nodes, NodeClaims,
// Pods, DaemonSets, NodePools and PodDisruptionBudgets, fed by the informer
// controllers in pkg/controllers/state.
//
// A NodeClaim and the Node it launched are joined into one StateNode by
// provider ID; a NodeClaim with no Node yet is an in-flight StateNode, and a
// Node no NodeClaim claims is an unmanaged one. Per node the view knows the
// bound pods, their requests, the DaemonSet pods' requests, host ports, the
// pods nominated to it (in memory, with an expiry) and whether it is marked
// for deletion.
//
// For the pod timing metrics it also remembers, in memory, when the
// provisioner first saw each pending pod (AckPods) and first decided about
// it (MarkSchedulingDecisions), and when it first placed it; a binding or
// the pod's deletion drops what no longer has a use.
//
// Invariants:
//   - Nothing returned aliases the internal maps: StateNode values, lists
//     and Snapshot nodes are the caller's, and a StateNode's Node and
//     NodeClaim are copies it may mutate.
//   - Pods are shared, not copied: the pods in StateNode.Pods,
//     StateNode.Nominated, Snapshot nodes, ProvisionablePods, HintedPods and
//     AwaitedPods are the view's own objects, which are the informer cache's. Callers
//     read them and never modify them. Copying them made up most of what a
//     scale-out allocated (every pass copied every pod it looked at).
//   - Synced reports false until every NodeClaim and Node the API (through
//     the client given to NewCluster, normally the manager's cache) holds is
//     in the view, and every launched NodeClaim is known with its provider
//     ID. Provisioning and disruption act only on a synced view; that is
//     what keeps a restarted controller from launching twice.
//   - Time comes from the injected clock only.
//
// The package imports the Kubernetes API types, controller-runtime's client
// (for Synced) and karp's pkg/apis, pkg/scheduling and pkg/simulation; it
// never imports pkg/controllers.
package state
