package operator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// TestControllersRunUnderTheManager registers the full controller list and
// checks the wiring: watches fire, field indexes resolve, and the metrics
// endpoint serves karp's metrics under upstream's names.
func TestControllersRunUnderTheManager(t *testing.T) {
	env := environment.New(t)
	healthPort, metricsPort := freePort(t), freePort(t)
	r := startWithControllers(t, env, healthPort, metricsPort)
	waitReady(t, r)

	h := env.Client
	if err := h.Create(t.Context(), test.MakeKWOKNodeClass("default").Obj()); err != nil {
		t.Fatal(err)
	}
	if err := h.Create(t.Context(), test.MakeNodePool("default").Limits(test.ResourceList("cpu", "1000")).Obj()); err != nil {
		t.Fatal(err)
	}
	nc := test.MakeNodeClaim("wired").NodePool("default").Obj()
	if err := h.Create(t.Context(), nc); err != nil {
		t.Fatal(err)
	}

	// The lifecycle launches it through the (decorated) provider; the
	// counter then sees its capacity; the hash controller stamps the pool.
	poll(t, "nodeclaim launched and pool counted", func() bool {
		got := &karpv1.NodeClaim{}
		pool := &karpv1.NodePool{}
		if h.Get(t.Context(), keyOf(nc.Name), got) != nil || h.Get(t.Context(), keyOf("default"), pool) != nil {
			return false
		}
		return got.StatusConditions().IsTrue(karpv1.ConditionTypeLaunched) &&
			pool.Status.Nodes != nil && *pool.Status.Nodes == 1 &&
			pool.Annotations[karpv1.NodePoolHashAnnotationKey] != ""
	})

	_, body, err := get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`karpenter_cloudprovider_duration_seconds_count{controller="nodeclaim.lifecycle",method="Create",provider="fake"}`,
		`karpenter_nodepools_usage{nodepool="default",resource_type="cpu"}`,
		`karpenter_nodepools_limit{nodepool="default",resource_type="cpu"} 1000`,
		`controller_runtime_reconcile_total{controller="nodeclaim.lifecycle"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Deleting the NodeClaim runs termination: it disappears.
	if err := h.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	poll(t, "nodeclaim terminated", func() bool {
		return h.Get(t.Context(), keyOf(nc.Name), &karpv1.NodeClaim{}) != nil
	})
}

func startWithControllers(t *testing.T, env *environment.Environment, healthPort, metricsPort int) *running {
	t.Helper()
	r := build(t, env, healthPort, metricsPort, "--disable-leader-election")
	if err := r.op.Register(t.Context(), controllers.NewControllers(r.op.Deps(fake.New()))...); err != nil {
		t.Fatal(err)
	}
	r.run()
	return r
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func keyOf(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
