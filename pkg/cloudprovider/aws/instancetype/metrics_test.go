package instancetype_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
)

func TestCollector(t *testing.T) {
	e := newEnv(t, nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(instancetype.NewCollector(e.provider))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == "m5.large" {
				got[f.GetName()] = m.GetGauge().GetValue()
			}
		}
		if n := len(f.GetMetric()); n != 1364 {
			t.Errorf("%s has %d samples, want one per catalog type (1364)", f.GetName(), n)
		}
	}
	if got["karpenter_cloudprovider_instance_type_cpu_cores"] != 2 || got["karpenter_cloudprovider_instance_type_memory_bytes"] != 8*1024*1024*1024 {
		t.Errorf("m5.large samples = %v, want 2 cores and 8 GiB", got)
	}
}
