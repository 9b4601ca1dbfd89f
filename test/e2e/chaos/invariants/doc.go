// Package invariants watches a running cluster while a chaos run disrupts
// it and says which of karp's promises were broken, with the objects and
// times involved. It samples real cluster state through watches (client-go
// informers on Pods, Nodes, PodDisruptionBudgets, ReplicaSets,
// StatefulSets and Namespaces), never logs.
//
// Continuously, from Start to Stop, it counts:
//
//   - evictions: pods gaining the DisruptionTarget condition with reason
//     EvictionByEvictionAPI, which the API server sets on every pod it
//     evicts before deleting it;
//   - voluntary disruptions: evictions, plus pods of a ReplicaSet or
//     StatefulSet deleted directly while bound to a node karp was
//     disrupting (and pods with no controller at all), plus pods lost with
//     a Node that was deleted while they still ran on it;
//   - PDB violations: a voluntary disruption of a healthy pod that left a
//     PodDisruptionBudget's healthy pods below its desired healthy count;
//   - do-not-disrupt violations: a pod annotated
//     karpenter.sh/do-not-disrupt: "true" voluntarily disrupted.
//
// The harness reports nodes taken by forces other than karp's voluntary
// disruption (a spot interruption, a reclaim, a manual delete) with
// Involuntary; violations on those nodes are kept apart as excused.
//
// At the end, CheckSettled (or WaitSettled, which polls it) compares the
// provider's instances with the NodeClaims one to one, looks for empty
// nodes consolidation should have removed, karp taints left behind, and
// pods not Running.
//
// A harness uses it as:
//
//	mon, err := invariants.Start(ctx, f.Config, invariants.Options{})
//	... run the phases; after `karp interrupt NODE`: mon.Involuntary(NODE) ...
//	report := mon.Stop()
//	found, err := invariants.WaitSettled(ctx, f.Client, invariants.KWOKInstances{Client: f.Client},
//		invariants.SettleOptions{Namespaces: workloadNamespaces}, 2*time.Second, 3*time.Minute)
//	report.Add(found...)
//	t.Log(report.String())
//
// The monitor should talk to the API server directly (the admin config),
// not through a fault proxy put in front of the controller; it survives
// API server and etcd restarts as its informers relist.
//
// What the monitor does not claim: a pod's last moments missed while its
// watch was down (the API server or etcd restarting) are counted as
// Unobserved, never guessed. Deletions by a pod's own controller (a
// ReplicaSet or StatefulSet scaling down, a rollout, a DaemonSet or Job
// deleting its pods, garbage collection of a deleted owner or namespace)
// are not disruptions.
package invariants
