// Package disruption keeps the two disruption signals on every managed
// NodeClaim current: Drifted (the node no longer matches its NodePool,
// its requirements, its instance type's offerings or its NodeClass) and
// Consolidatable (consolidation is enabled and consolidateAfter has passed
// since the node's last pod event, or since it initialized).
//
// It only writes conditions. The disruption controller
// (pkg/controllers/disruption) reads them to pick candidates; nothing here
// deletes or taints a node. Consolidatable flips to True at the exact
// moment consolidateAfter elapses (the reconcile is requeued for then);
// drift is re-checked every few minutes and on NodePool and NodeClass
// changes.
package disruption
