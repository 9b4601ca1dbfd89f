// Package instanceprofile owns the IAM instance profiles karp manages for
// EC2NodeClasses that name a node role (spec.role), as upstream Karpenter
// does: one profile per NodeClass, named <cluster>_<hash of region and
// NodeClass name> (upstream's deterministic name, so a cluster moving
// from Karpenter keeps its profiles), created under the IAM path
// /karpenter/<region>/<cluster>/<NodeClass UID>/, tagged for the cluster,
// region and NodeClass, with the role attached (a different role is
// replaced: a profile holds one). An existing profile of that name is
// reused. Deleting a NodeClass deletes the profiles under its path and
// its managed name, roles first.
//
// Nothing is deleted on IAM's word alone: ListInstanceProfiles' PathPrefix
// is checked client-side, and each profile is read again
// (GetInstanceProfile, which unlike the listing returns tags) and deleted
// only if it lies under /karpenter/<region>/<cluster>/ (the NodeClass's own
// path for a NodeClass's deletion), is named <cluster>_..., and is tagged
// kubernetes.io/cluster/<cluster>=owned or karpenter.sh/managed-by=<cluster>.
// Any other profile is skipped, logged at debug level.
//
// Lookups are cached for 15 minutes; a role IAM reports missing is
// remembered for a minute so a NodeClass naming a mistyped role does not
// call IAM on every reconcile. Profiles named by spec.instanceProfile are
// only looked up, never created, changed or deleted.
//
// Only the IAM calls of the narrowed IAMAPI are made; they are all in
// Karpenter's controller policy.
package instanceprofile
