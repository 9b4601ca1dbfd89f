// Package disruption is karp's voluntary disruption controller: a
// singleton loop that removes or replaces nodes the cluster no longer needs
// (empty, drifted, or whose pods fit elsewhere or on cheaper capacity),
// within each NodePool's budgets and never against a PDB or a
// karpenter.sh/do-not-disrupt pod or node.
//
// Spot nodes whose NodeClaim is RebalanceRecommended (set by a provider's
// interruption handling for NodePools annotated karp.sh/spot-rebalance:
// replace) are replaced by the method SpotRebalance, before drift: the
// replacement launches at once and the node is drained once it is
// initialized, within the Drifted budgets, with reason SpotRebalance.
// Being marked is the whole signal, so a repeated recommendation, or one
// for a node already queued or deleting, starts nothing.
//
// One pass (Controller.Reconcile):
//  1. Wait until the cluster state is synced.
//  2. Advance the orchestration queue: delete candidates whose
//     replacements are initialized, roll back commands that failed or
//     timed out. The candidates of a timed-out command (replacements that
//     never initialized) keep serving and are left alone for twice the
//     queue timeout, doubling with each such failure up to four hours
//     (DisruptionBlocked reason FailedDisruption), so a replacement that
//     cannot come up is not relaunched in a loop; as upstream, the
//     replacements themselves are kept. Remove stale karpenter.sh/disrupted taints and
//     DisruptionReason conditions from nodes no queued command owns (this
//     is what makes a controller restart safe).
//  3. If a consolidation command is awaiting validation and its delay has
//     passed, re-check it and start it (or reject it).
//  4. Otherwise build candidates and budgets, and try the methods in order
//     (NewMethods); the first command found is validated (consolidation)
//     or started at once (drift).
//  5. Record why every other managed node is not being disrupted: a
//     DisruptionBlocked NodeClaim condition and a de-duplicated event.
//     Reasons that depend on the node alone (consolidateAfter,
//     do-not-disrupt, PDBs, policy) are evaluated every pass and removed
//     once they no longer hold; search results (no cheaper placement,
//     budgets, spot-to-spot) stand until the next search of the node.
//
// A Method says its name, its consolidation type, its reason and whether
// its commands need validation; the controller never switches on a
// method's type. Methods get the pass's world and the simulator with each
// call, and their filters return the blocker of a node they turn down for
// the controller to record. The budgets (budgetsFor, withinBudget) and
// the why-not decision (whyNot) are pure functions of the pass's world,
// tested without an API server; the controller publishes their metrics
// and writes their conditions and events.
//
// Rollout budgets (Options.RespectRolloutBudget): a pod no PDB selects is
// held to its controller's own rollout budget (a Deployment's or
// StatefulSet's maxUnavailable; pkg/rollout reads it from the cache,
// pkg/scheduling RolloutBudget counts it). A node with a Ready pod whose
// controller already has as many unavailable replicas as its budget allows
// is blocked (reason RolloutBudget), as a PDB allowing no disruption blocks
// it, and a multi-node command takes together no more of a controller's
// Ready pods than its budget allows now (withinRolloutBudgets, re-checked
// at validation); a node holding more goes alone, its drain then evicting
// them in turn.
//
// Static NodePools (spec.replicas) are never consolidated; the methods
// that replace a node replace one of theirs one for one with a NodeClaim
// of the template (staticCommand, pkg/simulation StaticNodeClaims), not by
// placing its pods, and only while the NodePool is not over its replicas;
// at its limits.nodes a drifted node is deleted first and the
// nodepool/static controller launches its successor once it is gone.
//
// Decisions are made by the pure simulator (pkg/simulation Consolidate):
// every reschedulable pod of the candidates must fit on the remaining
// nodes plus the replacements, within the topology of its volumes. Spot
// nodes are replaced by spot capacity only with the
// SpotToSpotConsolidation gate, and a single node only when at least 15
// cheaper instance types exist (the replacement lists the 15 cheapest).
// The package acts through the API and the cluster state only; it never
// sleeps inside Reconcile.
package disruption
