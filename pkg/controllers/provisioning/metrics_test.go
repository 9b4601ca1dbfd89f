package provisioning_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/state"
)

func TestMetricsRegistrarToleratesASecondOperator(t *testing.T) {
	reg := prometheus.NewRegistry()
	cluster := state.NewCluster(clocktesting.NewFakeClock(time.Now()), env.Client)
	if err := provisioning.NewMetricsRegistrar(reg, cluster).Register(t.Context(), nil); err != nil {
		t.Fatalf("first registration: %v", err)
	}
	if err := provisioning.NewMetricsRegistrar(reg, cluster).Register(t.Context(), nil); err != nil {
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
	for _, want := range []string{"karpenter_scheduler_queue_depth", "karpenter_scheduler_unschedulable_pods_count",
		"karpenter_scheduler_ignored_pods_count", "karpenter_cluster_state_synced"} {
		if !names[want] {
			t.Errorf("%s not gathered (got %v)", want, names)
		}
	}
}
