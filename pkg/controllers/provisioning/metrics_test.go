package provisioning_test

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/state"
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
