// Package hash stamps each NodePool with the hash of its template
// (annotations karpenter.sh/nodepool-hash and karpenter.sh/nodepool-hash-version),
// the value of karpv1.NodePool.Hash, upstream Karpenter's hash bit for bit,
// for users, dashboards and a later upstream Karpenter to read. The
// provisioner and drift do not read the annotation: they compute the hash
// from the template they hold, since the annotation lags a template change.
//
// When the hash algorithm version changes, NodeClaims carrying the old
// version are re-stamped with the pool's new hash instead of being
// reported drifted; a NodeClaim already marked Drifted only gets the new
// version and stays drifted.
package hash
