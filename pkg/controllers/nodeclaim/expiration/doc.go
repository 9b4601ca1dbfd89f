// Package expiration deletes NodeClaims at their deadlines: when they have
// lived longer than their spec.expireAfter, and when the replace-by time
// an interruption or repair handler annotated them with
// (karpv1.ReplaceByAnnotationKey) has come. Both are forceful: they ignore
// disruption budgets, do-not-disrupt annotations and PDBs at decision time
// (the drain that follows still evicts through the Eviction API until the
// NodeClaim's terminationGracePeriod runs out). Before either deadline the
// disruption controller replaces the node first when it can (methods
// expiration, interruption, repair; --replace-first), so this controller
// acts only on the nodes it could not; the provisioner then launches for
// the drained pods.
package expiration
