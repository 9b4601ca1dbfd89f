package v1

// Spot rebalance recommendations (karp's own opt-in; upstream only
// publishes an event). A NodePool annotation rather than a spec field keeps
// the karpenter.sh/v1 schema identical to upstream's.
const (
	// SpotRebalanceAnnotationKey on a NodePool says what karp does when the
	// cloud recommends rebalancing one of the pool's spot nodes (EC2's
	// rebalance recommendation: the instance is at elevated risk of
	// interruption). Without it, or with any value but
	// SpotRebalanceReplace, karp only publishes an event, as upstream.
	SpotRebalanceAnnotationKey = "karp.sh/spot-rebalance"
	// SpotRebalanceReplace replaces the node ahead of its interruption:
	// the NodeClaim gets the RebalanceRecommended condition, its spot
	// offering is avoided for a while, and the disruption controller
	// launches a replacement and drains the node once the replacement is
	// initialized, within the pool's Drifted budgets.
	SpotRebalanceReplace = "replace"
)

// ReplacesOnSpotRebalance reports whether the NodePool opted in to
// replacing spot nodes on a rebalance recommendation.
func (in *NodePool) ReplacesOnSpotRebalance() bool {
	return in != nil && in.Annotations[SpotRebalanceAnnotationKey] == SpotRebalanceReplace
}
