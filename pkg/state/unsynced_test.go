package state_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// gauge gathers the collector and returns name's value (-1 if absent).
func gauge(t *testing.T, c prometheus.Collector, name string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.Metric) == 1 {
			return f.Metric[0].GetGauge().GetValue()
		}
	}
	return -1
}

func TestUnsyncedTimeGrowsWhileTheViewIsBehindAndResetsOnSync(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "unseen"}}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(node).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cluster := state.NewCluster(clk, kube)
	const name = "karpenter_cluster_state_unsynced_time_seconds"

	// 1. The API server has a node the view lacks: unsynced from the
	// first scrape on.
	if got := gauge(t, state.NewCollector(cluster), name); got != 0 {
		t.Fatalf("first scrape: %s = %v, want 0", name, got)
	}
	clk.Step(42 * time.Second)
	if got := gauge(t, state.NewCollector(cluster), name); got != 42 {
		t.Fatalf("after 42s behind: %s = %v, want 42", name, got)
	}
	// 2. The view catches up: back to 0.
	cluster.UpdateNode(node)
	if got := gauge(t, state.NewCollector(cluster), name); got != 0 {
		t.Fatalf("after sync: %s = %v, want 0", name, got)
	}
}
