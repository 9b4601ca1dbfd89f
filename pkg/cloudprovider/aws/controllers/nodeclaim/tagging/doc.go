// Package tagging tags the EC2 instance of each registered NodeClaim of an
// EC2NodeClass with what was not known at launch, as upstream Karpenter's
// nodeclaim.tagging controller does: Name (the node's name),
// karpenter.sh/nodeclaim (the NodeClaim's name) and eks:eks-cluster-name,
// each only when the instance lacks the key (a Name from spec.tags is
// kept). It runs once per NodeClaim: afterwards the NodeClaim is annotated
// karpenter.k8s.aws/tagged=true and
// compatibility.karpenter.k8s.aws/cluster-name-tagged=true, upstream's
// markers, so NodeClaims tagged by Karpenter are not tagged again.
//
// CreateTags shares EC2's mutating-call budget with CreateFleet, so the
// controller calls it at most once a second (a NodeClaim over the budget
// is requeued a second later; upstream sleeps). An instance that is gone
// is left to garbage collection; a failed call is retried with backoff.
package tagging
