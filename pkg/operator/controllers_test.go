package operator_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
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

	// The kubelet's Node appears: the Node watch drives registration and
	// initialization without any other trigger.
	launched := &karpv1.NodeClaim{}
	if err := h.Get(t.Context(), keyOf(nc.Name), launched); err != nil {
		t.Fatal(err)
	}
	node := test.MakeNode("wired-node").ProviderID(launched.Status.ProviderID).Taint(karpv1.UnregisteredNoExecuteTaint).Obj()
	if err := h.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	// Stand in for kube-controller-manager, which lifts the not-ready
	// taint the API server adds to new Nodes once they are Ready.
	poll(t, "not-ready taint lifted", func() bool {
		current := &corev1.Node{}
		if h.Get(t.Context(), keyOf(node.Name), current) != nil {
			return false
		}
		current.Spec.Taints = slices.DeleteFunc(current.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		return h.Update(t.Context(), current) == nil
	})
	got := &karpv1.NodeClaim{}
	current := &corev1.Node{}
	pollOr(t, "nodeclaim initialized", func() bool {
		return h.Get(t.Context(), keyOf(nc.Name), got) == nil && got.StatusConditions().IsTrue(karpv1.ConditionTypeReady)
	}, func() string {
		_ = h.Get(t.Context(), keyOf(node.Name), current)
		return fmt.Sprintf("nodeclaim conditions %+v; node taints %v labels %v", got.Status.Conditions, current.Spec.Taints, current.Labels)
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
		`karpenter_nodes_created_total{nodepool="default",zone=`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// The consistency check found the Node as the NodeClaim expected it.
	poll(t, "nodeclaim consistent", func() bool {
		return h.Get(t.Context(), keyOf(nc.Name), got) == nil && got.StatusConditions().IsTrue(karpv1.ConditionTypeConsistentStateFound)
	})

	// Deleting the NodeClaim runs termination: it and its Node disappear,
	// each with a Finalized event for karp's finalizer.
	if err := h.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	poll(t, "nodeclaim and node terminated", func() bool {
		return h.Get(t.Context(), keyOf(nc.Name), &karpv1.NodeClaim{}) != nil &&
			h.Get(t.Context(), keyOf(node.Name), &corev1.Node{}) != nil
	})
	poll(t, "Finalized events on the nodeclaim and the node", func() bool {
		var list eventsv1.EventList
		if h.List(t.Context(), &list) != nil {
			return false
		}
		finalized := map[string]bool{}
		for _, e := range list.Items {
			if e.Reason == "Finalized" && e.Note == "Finalized "+karpv1.TerminationFinalizer {
				finalized[e.Regarding.Kind+"/"+e.Regarding.Name] = true
			}
		}
		return finalized["NodeClaim/"+nc.Name] && finalized["Node/"+node.Name]
	})
}

func startWithControllers(t *testing.T, env *environment.Environment, healthPort, metricsPort int) *running {
	t.Helper()
	r := build(t, env, healthPort, metricsPort, "--disable-leader-election")
	if err := r.op.Register(t.Context(), controllers.NewControllers(r.op.Deps(fake.New()))...); err != nil {
		t.Fatal(err)
	}
	r.run(t.Context())
	return r
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	pollOr(t, what, cond, func() string { return "" })
}

// pollOr waits for cond; on timeout it fails with describe's account.
func pollOr(t *testing.T, what string, cond func() bool, describe func() string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v %s", what, err, describe())
	}
}

func keyOf(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
