package status

import (
	"context"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	metricsstatus "github.com/karp-autoscaler/karp/pkg/metrics/status"
)

// Registrar registers the status-condition metrics of NodeClaims,
// NodePools and Nodes: the scrape-time gauges over the manager's cache
// and the controllers that observe transitions and terminations.
type Registrar struct {
	reg           prometheus.Registerer
	clock         clock.PassiveClock
	cloudProvider cloudprovider.CloudProvider
	recorder      events.EventRecorder
	// capacityBuffers also reports CapacityBuffers (the gate is on).
	capacityBuffers bool
}

// NewRegistrar returns the registrar for reg; recorder receives the
// condition transition events.
func NewRegistrar(reg prometheus.Registerer, clk clock.PassiveClock, cloudProvider cloudprovider.CloudProvider, recorder events.EventRecorder) *Registrar {
	return &Registrar{reg: reg, clock: clk, cloudProvider: cloudProvider, recorder: recorder}
}

// WithCapacityBuffers also reports CapacityBuffers' conditions, as
// upstream does with the CapacityBuffer feature gate on.
func (r *Registrar) WithCapacityBuffers() *Registrar {
	r.capacityBuffers = true
	return r
}

// Name names the registrar in the controller list.
func (r *Registrar) Name() string { return "metrics.status" }

// Register registers the kinds' metrics and controllers. NodeClaims are
// labelled by the NodeClass label of each kind the provider supports
// (group/lower-case kind) and the NodePool label; Nodes by the same and
// karpenter.sh/initialized, as upstream's.
func (r *Registrar) Register(ctx context.Context, mgr manager.Manager) error {
	nodeClassLabels, err := NodeClassLabelKeys(r.cloudProvider, mgr)
	if err != nil {
		return err
	}
	kinds := Kinds(nodeClassLabels)
	if r.capacityBuffers {
		kinds = append(kinds, metricsstatus.CapacityBuffers())
	}
	return metricsstatus.NewRegistrar(r.reg, r.clock, r.recorder, kinds...).Register(ctx, mgr)
}

// Kinds are the core kinds reported, given the provider's NodeClass label
// keys.
func Kinds(nodeClassLabels []string) []metricsstatus.Kind {
	claimLabels := append(append([]string{}, nodeClassLabels...), karpv1.NodePoolLabelKey)
	nodeLabels := append(append([]string{}, claimLabels...), karpv1.NodeInitializedLabelKey)
	return []metricsstatus.Kind{
		metricsstatus.NodeClaims(claimLabels),
		metricsstatus.NodePools(),
		metricsstatus.Nodes(nodeLabels),
	}
}

// NodeClassLabelKeys are the NodeClass label keys of the kinds the
// provider supports ("karpenter.k8s.aws/ec2nodeclass").
func NodeClassLabelKeys(cloudProvider cloudprovider.CloudProvider, mgr manager.Manager) ([]string, error) {
	var labels []string
	for _, nc := range cloudProvider.GetSupportedNodeClasses() {
		gvk, err := apiutil.GVKForObject(nc, mgr.GetScheme())
		if err != nil {
			return nil, err
		}
		labels = append(labels, gvk.Group+"/"+strings.ToLower(gvk.Kind))
	}
	return labels, nil
}
