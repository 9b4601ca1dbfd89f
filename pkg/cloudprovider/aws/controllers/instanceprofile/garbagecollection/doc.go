// Package garbagecollection deletes the instance profiles karp (or
// Karpenter) created in this cluster and region that nothing uses any more,
// as upstream's instanceprofile.garbagecollection does, every 30 minutes:
// a profile under /karpenter/<region>/<cluster>/ is deleted (role removed
// first) unless
//
//   - an EC2NodeClass's status.instanceProfile names it,
//   - it has the managed name of an existing EC2NodeClass with spec.role
//     (so a profile just created, whose name has not reached the status
//     yet, stays),
//   - a NodeClaim's karpenter.k8s.aws/instance-profile-name annotation
//     names it (its instance still runs with it), or
//   - it was created less than an hour ago (upstream's protection window).
//
// Whatever IAM's listing returned, a profile is deleted only if it is
// under that path, named <cluster>_..., and tagged as the cluster's (see
// package instanceprofile); a user's profile, or one under karp's path
// that karp did not make, is never deleted.
//
// Such leftovers come from a NodeClass switched from spec.role to
// spec.instanceProfile, a NodeClass deleted before its finalizer was added,
// and the per-role profiles of a cluster that ran Karpenter before. The
// EC2NodeClass finalizer deletes a deleted class's profiles itself. Not
// run with --isolated-vpc, as upstream.
package garbagecollection
