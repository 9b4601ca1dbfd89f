// Package termination finalizes karp-managed Nodes: it drains them through
// the Eviction API, waits for their volumes to detach, deletes the
// instance and only then releases the karpenter.sh/termination finalizer.
//
// Order of work for a deleting Node that carries the finalizer:
//
//  1. delete its NodeClaim if nobody did (the NodeClaim's own finalizer
//     waits for the Node to go, then confirms the instance is gone);
//  2. taint it karpenter.sh/disrupted:NoSchedule and label it
//     node.kubernetes.io/exclude-from-external-load-balancers;
//  3. drain: evict, group by group, non-critical workload pods, then
//     non-critical DaemonSet pods, then critical pods, then critical
//     DaemonSet pods. Evictions go through the eviction Queue (policy/v1
//     Eviction with a UID precondition, so a replayed request never
//     removes a newer pod of the same name); PodDisruptionBudgets are
//     enforced by the API server and a refusal (429) is retried with
//     exponential backoff. Pods tolerating the disrupted taint, mirror pods
//     and finished pods are left alone. Pods annotated
//     karpenter.sh/do-not-disrupt are not evicted. A pod no PDB selects is
//     held to its controller's rollout budget instead (see below);
//  4. when the NodeClaim's terminationGracePeriod runs out (annotation
//     karpenter.sh/nodeclaim-termination-timestamp), each remaining pod is
//     deleted directly at the deadline minus its own grace period, PDBs and
//     do-not-disrupt notwithstanding: that is the only plain delete;
//  5. wait for VolumeAttachments of drained pods to go (skipped once the
//     deadline passed);
//  6. delete the instance and wait until the provider no longer has it;
//  7. release the finalizer.
//
// Rollout budgets (Queue.WithRolloutBudgets, --respect-rollout-budget):
// before evicting a Ready pod that no PodDisruptionBudget selects and whose
// controller is a Deployment (through its ReplicaSet), a ReplicaSet or a
// StatefulSet, the queue reads from the cache how many of the controller's
// replicas are unavailable (spec.replicas minus its Ready, non-terminating
// pods; pkg/rollout, pkg/scheduling RolloutBudget). If they already reach
// the controller's maxUnavailable, the eviction waits with the usual
// backoff and the pod gets a FailedDraining event naming the budget. A pod
// the queue let go counts as unavailable until the cache shows it
// terminating, so the queue's workers and the drains of several nodes never
// spend one budget twice. The termination deadline (step 4) bypasses the
// queue and so the budget.
//
// Progress is recorded on the NodeClaim as the Drained, VolumesDetached
// and InstanceTerminating conditions. All decisions are made from the API
// server's current state on each pass (pods are read from the API server,
// not from a cache), so a restarted controller resumes where the last one
// stopped without evicting a pod twice.
//
// The package must not import pkg/operator or other controllers.
package termination
