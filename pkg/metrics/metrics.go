package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace prefixes every karp metric, as upstream's do.
const Namespace = "karpenter"

// Subsystems.
const (
	NodeClaimSubsystem     = "nodeclaims"
	NodeSubsystem          = "nodes"
	NodePoolSubsystem      = "nodepools"
	CloudProviderSubsystem = "cloudprovider"
)

// Label names.
const (
	ReasonLabel           = "reason"
	NodePoolLabel         = "nodepool"
	ZoneLabel             = "zone"
	CapacityTypeLabel     = "capacity_type"
	InstanceTypeLabel     = "instance_type"
	ResourceTypeLabel     = "resource_type"
	MinValuesRelaxedLabel = "min_values_relaxed"
	ControllerLabel       = "controller"
	MethodLabel           = "method"
	ProviderLabel         = "provider"
	ErrorLabel            = "error"
)

// Values of ReasonLabel on NodeClaimsCreatedTotal and
// NodeClaimsTerminatedTotal's producers.
const (
	ReasonProvisioned          = "provisioned"
	ReasonInsufficientCapacity = "insufficient_capacity"
	ReasonNodeClassNotReady    = "nodeclass_not_ready"
	ReasonLaunchTimeout        = "launch_timeout"
	ReasonRegistrationTimeout  = "registration_timeout"
	ReasonGarbageCollected     = "garbage_collected"
)

var (
	// NodeClaimsCreatedTotal counts NodeClaims created, by why
	// (ReasonProvisioned, ...), NodePool and whether minValues were relaxed.
	// The provisioner increments it.
	NodeClaimsCreatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: NodeClaimSubsystem, Name: "created_total",
		Help: "Number of nodeclaims created in total by Karpenter. Labeled by reason, nodepool and min values relaxation.",
	}, []string{ReasonLabel, NodePoolLabel, MinValuesRelaxedLabel})

	// NodeClaimsTerminatedTotal counts NodeClaims whose finalizer karp
	// removed (instance and Node gone).
	NodeClaimsTerminatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: NodeClaimSubsystem, Name: "terminated_total",
		Help: "Number of nodeclaims terminated in total by Karpenter. Labeled by the owning nodepool, capacity type and zone.",
	}, []string{NodePoolLabel, CapacityTypeLabel, ZoneLabel})

	// NodesCreatedTotal counts Nodes that registered for a NodeClaim.
	NodesCreatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: NodeSubsystem, Name: "created_total",
		Help: "Number of nodes created in total by Karpenter. Labeled by owning nodepool and zone.",
	}, []string{NodePoolLabel, ZoneLabel})

	// NodesTerminatedTotal counts Nodes whose karp finalizer was removed.
	NodesTerminatedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: NodeSubsystem, Name: "terminated_total",
		Help: "Number of nodes terminated in total by Karpenter. Labeled by owning nodepool and zone.",
	}, []string{NodePoolLabel, ZoneLabel})

	// NodePoolUsage is the resources a NodePool's nodes hold (their
	// capacity), per resource type; "nodes" counts the nodes.
	NodePoolUsage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: NodePoolSubsystem, Name: "usage",
		Help: "The amount of resources that have been provisioned for a nodepool. Labeled by nodepool name and resource type.",
	}, []string{NodePoolLabel, ResourceTypeLabel})

	// NodePoolLimit is a NodePool's spec.limits, per resource type.
	NodePoolLimit = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: NodePoolSubsystem, Name: "limit",
		Help: "Limits specified on the nodepool that restrict the quantity of resources provisioned. Labeled by nodepool name and resource type.",
	}, []string{NodePoolLabel, ResourceTypeLabel})

	// CloudProviderDurationSeconds times cloud provider calls.
	CloudProviderDurationSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Subsystem: CloudProviderSubsystem, Name: "duration_seconds",
		Help:    "Duration of cloud provider method calls. Labeled by the controller, method name and provider.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{ControllerLabel, MethodLabel, ProviderLabel})

	// CloudProviderErrorsTotal counts failed cloud provider calls by the
	// error's kind (see errorKind).
	CloudProviderErrorsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Subsystem: CloudProviderSubsystem, Name: "errors_total",
		Help: "Total number of errors returned from CloudProvider calls.",
	}, []string{ControllerLabel, MethodLabel, ProviderLabel, ErrorLabel})

	// Offerings exports the hourly price estimate and the availability of
	// every offering the provider reports
	// (karpenter_cloudprovider_instance_type_offering_price_estimate and
	// karpenter_cloudprovider_instance_type_offering_available).
	Offerings = newOfferingCollector()
)

// shared lists the metrics this package defines.
func shared() []prometheus.Collector {
	return []prometheus.Collector{
		NodeClaimsCreatedTotal,
		NodeClaimsTerminatedTotal,
		NodesCreatedTotal,
		NodesTerminatedTotal,
		NodePoolUsage,
		NodePoolLimit,
		CloudProviderDurationSeconds,
		CloudProviderErrorsTotal,
		Offerings,
		NodeClaimsDisruptedTotal,
		BuildInfo,
	}
}

// Register registers the shared metrics and any extra collectors (a
// controller's own metrics) with reg. Registering the same collector twice
// is not an error, so tests and restarts may call it again.
func Register(reg prometheus.Registerer, extra ...prometheus.Collector) error {
	var errs []error
	for _, c := range append(shared(), extra...) {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				continue
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// IgnoreAlreadyRegistered drops from err (possibly errors.Join of several)
// the prometheus.AlreadyRegisteredError values: a second operator in one
// process (tests that build several) keeps the first registration.
func IgnoreAlreadyRegistered(err error) error {
	var kept []error
	for _, e := range flatten(err) {
		if are := (prometheus.AlreadyRegisteredError{}); !errors.As(e, &are) {
			kept = append(kept, e)
		}
	}
	return errors.Join(kept...)
}

// flatten lists the errors inside nested errors.Join values.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range joined.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}
