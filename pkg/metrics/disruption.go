package metrics

import "github.com/prometheus/client_golang/prometheus"

// Label names of the disruption metrics.
const (
	ConsolidationPolicyLabel = "consolidation_policy"
	TerminationModeLabel     = "termination_mode"
)

// Values of TerminationModeLabel.
const (
	// TerminationModeGraceful: the node is tainted, replaced first and
	// drained within budgets (consolidation, drift).
	TerminationModeGraceful = "graceful"
	// TerminationModeForceful: the NodeClaim is deleted at once, bypassing
	// budgets (expiration, repair, interruption).
	TerminationModeForceful = "forceful"
)

// Values of ReasonLabel on NodeClaimsDisruptedTotal for the forceful paths.
const (
	ReasonExpired     = "expired"
	ReasonUnhealthy   = "unhealthy"
	ReasonInterrupted = "interrupted"
)

// NodeClaimsDisruptedTotal counts NodeClaims karp decided to disrupt, by
// why, NodePool, capacity type, the pool's consolidation policy and
// whether the path was graceful or forceful.
var NodeClaimsDisruptedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Namespace: Namespace, Subsystem: NodeClaimSubsystem, Name: "disrupted_total",
	Help: "Number of nodeclaims disrupted in total by Karpenter. Labeled by reason, nodepool, capacity type, consolidation policy and termination mode.",
}, []string{ReasonLabel, NodePoolLabel, CapacityTypeLabel, ConsolidationPolicyLabel, TerminationModeLabel})
