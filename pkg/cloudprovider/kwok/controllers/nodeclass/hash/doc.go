// Package hash re-stamps NodeClaims when the KWOKNodeClass hash algorithm
// version changes, the way upstream Karpenter's NodePool hash controller
// (and the AWS provider's EC2NodeClass hash controller) does: a NodeClaim
// whose karpenter.kwok.sh/kwoknodeclass-hash-version differs from the
// current one gets the current hash of its KWOKNodeClass and the current
// version, so an algorithm change is never read as drift and later
// changes to the class are detected again. A NodeClaim already marked
// Drifted only gets the new version and stays drifted. NodeClaims without
// a hash annotation (not launched by karp's kwok provider) are left alone.
package hash
