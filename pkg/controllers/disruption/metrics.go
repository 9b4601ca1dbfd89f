package disruption

import (
	"errors"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

const (
	voluntaryDisruptionSubsystem = "voluntary_disruption"
	decisionLabel                = "decision"
	consolidationTypeLabel       = "consolidation_type"
	policyLabel                  = "policy"
)

// Values of decisionLabel on consolidationScore and consolidationMoves,
// as upstream's: whether a consolidation move's NodePool accepted it.
const (
	moveApproved = "approved"
	moveRejected = "rejected"
)

var (
	decisionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: voluntaryDisruptionSubsystem, Name: "decisions_total",
		Help: "Number of disruption decisions performed. Labeled by disruption decision, reason, and consolidation type.",
	}, []string{decisionLabel, metrics.ReasonLabel, consolidationTypeLabel})
	decisionsByNodePool = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: voluntaryDisruptionSubsystem, Name: "decisions_by_nodepool_total",
		Help: "Number of disruption decisions performed by nodepool. Labeled by nodepool name, disruption decision, reason, and consolidation type.",
	}, []string{metrics.NodePoolLabel, decisionLabel, metrics.ReasonLabel, consolidationTypeLabel})
	eligibleNodes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: voluntaryDisruptionSubsystem, Name: "eligible_nodes",
		Help: "Number of nodes eligible for disruption by Karpenter. Labeled by disruption reason.",
	}, []string{metrics.ReasonLabel})
	evaluationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: voluntaryDisruptionSubsystem, Name: "decision_evaluation_duration_seconds",
		Help:    "Duration of the disruption decision evaluation process in seconds. Labeled by method and consolidation type.",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
	}, []string{metrics.ReasonLabel, consolidationTypeLabel})
	consolidationTimeouts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: voluntaryDisruptionSubsystem, Name: "consolidation_timeouts_total",
		Help: "Number of times the Consolidation algorithm has reached a timeout. Labeled by consolidation type.",
	}, []string{consolidationTypeLabel})
	failedValidations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: voluntaryDisruptionSubsystem, Name: "failed_validations_total",
		Help: "Number of candidates that were selected for disruption but failed validation. Labeled by consolidation type.",
	}, []string{consolidationTypeLabel})
	queueFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: voluntaryDisruptionSubsystem, Name: "queue_failures_total",
		Help: "The number of times that an enqueued disruption decision failed. Labeled by disruption method.",
	}, []string{decisionLabel, metrics.ReasonLabel, consolidationTypeLabel})
	allowedDisruptions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: metrics.NodePoolSubsystem, Name: "allowed_disruptions",
		Help: "The number of nodes for a given NodePool that can be concurrently disrupting at a point in time. Labeled by NodePool and reason.",
	}, []string{metrics.NodePoolLabel, metrics.ReasonLabel})
	// nodesConsumingBudgets is, per NodePool and reason, how many of the
	// nodes budgets count are already being disrupted or NotReady (what
	// budgetsFor subtracts from the allowance).
	nodesConsumingBudgets = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: metrics.NodePoolSubsystem, Name: "nodes_consuming_budgets",
		Help: "The number of nodes consuming the budget of a nodepool at a point in time. Labeled by NodePool.",
	}, []string{metrics.NodePoolLabel, metrics.ReasonLabel})
	// consolidationScore observes, per NodePool with the Balanced policy, the
	// score of each consolidation move evaluated (savings share over
	// disruption share; approved at 0.5 or more).
	consolidationScore = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Name: "consolidation_score",
		Help:    "Score of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
		Buckets: []float64{0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0},
	}, []string{decisionLabel, metrics.NodePoolLabel, policyLabel})
	// consolidationMoves counts the consolidation moves evaluated per
	// NodePool touched, whatever its policy; only Balanced pools reject.
	consolidationMoves = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Name: "consolidation_moves_total",
		Help: "Number of balanced consolidation moves. Labeled by decision, NodePool, and policy.",
	}, []string{decisionLabel, metrics.NodePoolLabel, policyLabel})
)

// reasonValue is a disruption reason as a metric label value: lower case,
// as upstream's ("underutilized", "empty", "drifted").
func reasonValue(reason karpv1.DisruptionReason) string {
	return strings.ToLower(string(reason))
}

// RegisterMetrics registers the disruption metrics (and the shared
// NodeClaimsDisruptedTotal, when nobody did) with reg; registering twice is
// harmless.
func RegisterMetrics(reg prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{decisionsTotal, eligibleNodes, evaluationDuration, consolidationTimeouts,
		failedValidations, queueFailures, allowedDisruptions, nodesConsumingBudgets, consolidationScore, consolidationMoves, decisionsByNodePool,
		metrics.NodeClaimsDisruptedTotal} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
