package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

func TestRegisterIsIdempotent(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := metrics.Register(reg); err != nil {
		t.Fatal(err)
	}
	if err := metrics.Register(reg); err != nil {
		t.Errorf("second Register: %v", err)
	}
	metrics.NodesCreatedTotal.WithLabelValues("p", "z").Inc()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range families {
		if f.GetName() == "karpenter_nodes_created_total" {
			found = true
		}
	}
	if !found {
		t.Error("karpenter_nodes_created_total not gathered")
	}
}
