package metrics_test

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

func TestBuildInfoIsRegisteredWithUpstreamLabels(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := metrics.Register(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "karpenter_build_info" {
			continue
		}
		if len(f.Metric) != 1 {
			t.Fatalf("%d build_info series, want 1", len(f.Metric))
		}
		got := map[string]string{}
		for _, l := range f.Metric[0].Label {
			got[l.GetName()] = l.GetValue()
		}
		want := map[string]string{"version": metrics.Version, "goversion": runtime.Version(), "goarch": runtime.GOARCH, "commit": metrics.Commit}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("label %s = %q, want %q", k, got[k], v)
			}
		}
		if v := testutil.ToFloat64(metrics.BuildInfo); v != 1 {
			t.Errorf("build_info = %v, want 1", v)
		}
		return
	}
	t.Fatal("karpenter_build_info not registered")
}
