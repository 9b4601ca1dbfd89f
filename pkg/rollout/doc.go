// Package rollout reads, through the controller-runtime cache, the rollout
// budget that governs evicting a pod no PodDisruptionBudget selects: its
// controller's own maxUnavailable (a Deployment, through the pod's
// ReplicaSet; a ReplicaSet no Deployment controls; a StatefulSet) and how
// many of its replicas are unavailable now. The arithmetic is pure and
// lives in pkg/scheduling (RolloutController, RolloutBudget); this package
// only finds the controller and its pods.
//
// Both the drain (pkg/controllers/node/termination, before each eviction)
// and consolidation (pkg/controllers/disruption, for each candidate's pods)
// read budgets through a View, so they count alike.
//
// The package imports API types, controller-runtime's client and
// pkg/scheduling; it must not import pkg/controllers or pkg/operator.
package rollout
