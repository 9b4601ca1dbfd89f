// Package counter keeps each NodePool's status.resources and status.nodes
// equal to what its nodes hold, and exports the karpenter_nodepools_usage
// and karpenter_nodepools_limit gauges.
//
// A pool's nodes are its NodeClaims (label karpenter.sh/nodepool) joined
// with Nodes by providerID: a registered NodeClaim counts its Node's
// capacity, a launched one not yet registered counts the capacity the
// provider reported, so limits see capacity as soon as it is bought.
// Nodes labelled with the pool but without a NodeClaim count too.
package counter
