// Package expiration deletes NodeClaims that have lived longer than their
// spec.expireAfter. Expiration is forceful: it ignores disruption budgets,
// do-not-disrupt annotations and PDBs at decision time (the drain that
// follows still evicts through the Eviction API until the NodeClaim's
// terminationGracePeriod runs out). The replacement capacity comes from
// the provisioner, which sees the drained pods as pending.
package expiration
