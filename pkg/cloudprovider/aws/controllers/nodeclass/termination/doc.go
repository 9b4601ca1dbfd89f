// Package termination holds each EC2NodeClass with the finalizer
// karpenter.k8s.aws/termination and, when the NodeClass is deleted, cleans
// up what karp made for it, as upstream Karpenter's EC2NodeClass
// termination does:
//
//  1. While any NodeClaim still references the NodeClass, nothing is
//     deleted: a Normal WaitingOnNodeClaimTermination event names up to
//     five of them, and the NodeClass is looked at again when one of its
//     NodeClaims goes (and every 10 minutes regardless).
//  2. Then the NodeClass's launch templates (tagged with the cluster and
//     the NodeClass) are deleted, and the instance profiles karp created
//     for its spec.role (skipped with --isolated-vpc, as upstream).
//  3. Then the finalizer is removed and the API server deletes the object.
//
// A failed AWS call is returned and retried with backoff; the finalizer
// stays until the cleanup succeeded, so nothing is leaked. Profiles named
// by spec.instanceProfile are the user's and are never deleted.
package termination
