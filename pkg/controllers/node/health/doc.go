// Package health repairs nodes: a karp-managed Node whose condition has
// matched one of the cloud provider's RepairPolicies for the policy's
// toleration is replaced by deleting its NodeClaim with a termination
// deadline of now (its pods are not evicted one by one through budgets:
// the node is already broken). Repair never takes more than 20% (rounded
// up) of a NodePool's nodes at once, or of all nodes for standalone
// NodeClaims; beyond that it publishes NodeRepairBlocked and retries.
//
// It runs only when the NodeRepair feature gate is on (as upstream).
package health
