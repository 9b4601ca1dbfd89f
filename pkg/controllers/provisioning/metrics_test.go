package provisioning_test

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestMetricsRegistrarToleratesASecondOperator(t *testing.T) {
	reg := prometheus.NewRegistry()
	cluster := state.NewCluster(clocktesting.NewFakeClock(time.Now()), env.Client)
	// The operator registers the provisioner's and the cluster state's
	// metrics, each with its registrar.
	register := func() error {
		return errors.Join(provisioning.NewMetricsRegistrar(reg).Register(t.Context(), nil),
			statecontrollers.NewMetricsRegistrar(reg, cluster).Register(t.Context(), nil))
	}
	if err := register(); err != nil {
		t.Fatalf("first registration: %v", err)
	}
	if err := register(); err != nil {
		t.Errorf("second registration: %v", err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	// karpenter_scheduler_queue_depth has a series per pass
	// (scheduling_id), so none before the first.
	for _, want := range []string{"karpenter_scheduler_unschedulable_pods_count",
		"karpenter_scheduler_ignored_pods_count", "karpenter_cluster_state_synced"} {
		if !names[want] {
			t.Errorf("%s not gathered (got %v)", want, names)
		}
	}
}

func TestPendingPodsByEffectiveZone(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := provisioning.Register(reg); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	pinned := map[string]string{corev1.LabelTopologyZone: fake.Zones[1]}
	h.pendingPods(
		test.MakePod("anywhere-0").Requests("cpu", "1").Obj(),
		test.MakePod("anywhere-1").Requests("cpu", "1").Obj(),
		test.MakePod("pinned").Requests("cpu", "1").NodeSelector(pinned).Obj(),
	)

	h.schedule()

	if got, want := zoneGauge(t, reg), map[string]float64{"flexible": 2, fake.Zones[1]: 1}; !maps.Equal(got, want) {
		t.Errorf("karpenter_scheduler_pending_pods_by_effective_zone_count = %v, want %v", got, want)
	}
}

// zoneGauge reads the provisioner's pending-by-zone series by zone.
func zoneGauge(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "karpenter_scheduler_pending_pods_by_effective_zone_count" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["controller"] == "provisioner" {
				out[labels["zone"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}
