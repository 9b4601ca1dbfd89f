// Package simulation is karp's scheduling simulator: given pending pods, the
// cluster's nodes (existing, in flight, being deleted), DaemonSets,
// LimitRanges and NodePools with their instance types, Solve decides which
// new NodeClaims to launch, which pods go to existing capacity, and why each
// remaining pod cannot be placed.
//
// It is pure: data in, decisions out. It imports only the standard library,
// k8s.io/api, k8s.io/apimachinery, karp's pkg/apis and pkg/scheduling. It
// never reads the clock (it needs no time) and never logs; reasons are
// returned as values (scheduling.Status), so "does not fit" is never an error.
//
// How it packs (see Solve): pods are grouped into scheduling equivalence
// classes whose compatibility (requirements, tolerated NodePools, fitting
// instance types, topology groups) is computed once; pods are sorted
// largest-first by their summed share of the largest allocatable of each
// resource. Each pod goes to existing capacity if
// it fits there at any relaxation level (kube-scheduler would bind it there),
// else, level by level, to the open NodeClaim where it raises the cost least
// (tightest fit on ties; a memory-heavy pod looks for one to grow among
// those with the least free cpu first), else to a new NodeClaim from the first NodePool (by
// weight) that can hold it when that is cheaper. Every NodeClaim always
// carries the cheapest instance type its pods fit on, so "shrinking" is
// continuous. Once every pod is placed, the new NodeClaims are compacted
// (merge.go, empty.go, shrink.go, swap.go): pairs merge into one NodeClaim
// whose cheapest type costs no more than both while every constraint still
// holds, then the cheapest NodeClaims are emptied into room the others have,
// those whose pods partly fit elsewhere shrink to a cheaper type, and pods
// are exchanged between pairs of NodeClaims whose resource mixes complement
// each other when the pair then costs less, so on price lists where a node
// twice the size costs twice as much the batch ends in fewer, fuller nodes
// instead of one small node per pod. Which pods may move is in move.go: a
// move keeps every constraint as Result.Order replays it. Room under a
// NodePool's limits that compaction gives back is offered to the pods still
// pending before Solve returns, and when a limit refused pods Solve tries
// the limit-efficient strategies of binding.go and keeps the result that
// leaves the fewest pods pending, then the cheapest. Capacity
// reservations are handed out in NodeClaim order while they have room; a
// NodeClaim that gets one is pinned to it. Pods with resource claims (DRA)
// are reported, not simulated. Resource math uses int64 vectors; results
// are deterministic for the same input.
//
// Invariants:
//   - Every placement satisfies the pod's hard constraints at the moment it
//     is made, in Result.Order: requests plus DaemonSet overhead within
//     allocatable, taints tolerated, requirements compatible, host ports
//     free, topology spread and pod (anti-)affinity satisfied, NodePool
//     limits respected, and an existing node's CSI volume limits
//     (Node.VolumeLimits) kept (new NodeClaims have none known yet).
//   - A NodeClaim's daemon overhead counts exactly the DaemonSets whose pods
//     would land on it (node affinity against the NodePool and instance type,
//     tolerations, LimitRange defaults), and never less.
//   - A pod counted by a zone-like topology group fixes its NodeClaim's
//     domain for that key when it is placed.
//   - Compaction never raises the total price (beyond float rounding,
//     priceTolerance) and never adds a NodeClaim; a merged, emptied,
//     shrunk or swapped pod keeps every constraint it was placed under.
//   - A NodePool's limits hold for every launch choice: its existing
//     nodes plus the largest type each new NodeClaim lists stay within
//     them, and a pod a limit refused is told exactly that usage.
package simulation
