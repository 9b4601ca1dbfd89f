package disruption_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// deployment creates a Deployment of replicas with maxUnavailable (""
// keeps the default, 25%) and its ReplicaSet, deleted when the test ends;
// it returns a maker of the ReplicaSet's pods (no Deployment controller
// runs here).
func (h *harness) deployment(name string, replicas int32, maxUnavailable string) func(pod string, cpu string) *corev1.Pod {
	h.t.Helper()
	dw := test.MakeDeployment(name).Replicas(replicas)
	if maxUnavailable != "" {
		dw.MaxUnavailable(maxUnavailable)
	}
	d := dw.Obj()
	h.create(d)
	rs := test.ReplicaSetOf(d, "h1")
	h.create(rs)
	h.t.Cleanup(func() {
		for _, o := range []client.Object{rs, d} {
			_ = h.client.Delete(context.WithoutCancel(h.ctx), o)
		}
	})
	return func(pod, cpu string) *corev1.Pod {
		p := test.MakePod(pod).Namespace("default").Requests("cpu", cpu).Obj()
		test.ControlledBy(p, rs, "ReplicaSet", rs.Spec.Template.Labels)
		return p
	}
}

// elsewhere creates the pod running on a node karp does not manage,
// Ready or not, and waits until the cache shows it so.
func (h *harness) elsewhere(pod *corev1.Pod, ready bool) {
	h.t.Helper()
	h.bind(pod, "elsewhere")
	if !ready {
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		if err := h.client.Status().Update(h.ctx, pod); err != nil {
			h.t.Fatalf("updating pod status: %v", err)
		}
	}
	h.eventually("pod "+pod.Name+" in the cache", func() bool {
		got := &corev1.Pod{}
		if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(pod), got); err != nil {
			return false
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodReady {
				return (c.Status == corev1.ConditionTrue) == ready
			}
		}
		return false
	})
}

// (d) A node holding a pod of a 4-replica Deployment without a PDB
// (maxUnavailable 25%: 1) is not consolidated while another of its pods
// is not Ready: evicting it would make 2 of 4 unavailable. The node says
// why (RolloutBudget, naming the Deployment, its unavailable count and
// its budget). With every pod Ready, with the rule turned off, or with a
// PDB that allows the eviction, the node is consolidated.
func TestRolloutBudgetKeepsANodeFromConsolidation(t *testing.T) {
	cases := map[string]struct {
		unready  bool // a pod of the Deployment elsewhere is not Ready
		off      bool // --respect-rollout-budget=false
		pdb      bool // a PDB allowing one disruption selects the pods
		wantKept bool
	}{
		"another pod is not Ready":          {unready: true, wantKept: true},
		"every pod is Ready":                {},
		"rollout budgets are not respected": {unready: true, off: true},
		"a PDB governs the pods":            {unready: true, pdb: true},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			if tc.off {
				h.opts.RespectRolloutBudget = false
				h.newController()
			}
			app := fmt.Sprintf("web%d", i)
			node := "rollout-" + app
			newPod := h.deployment(app, 4, "")
			h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
			if tc.pdb {
				h.pdb(app, app, 1)
			}
			h.elsewhere(newPod(app+"-b", "1"), true)
			h.elsewhere(newPod(app+"-c", "1"), true)
			h.elsewhere(newPod(app+"-d", "1"), !tc.unready)
			h.runningNode(node, nodeOpts{it: largeType}, newPod(app+"-a", "1"))
			h.decide()
			disrupted := h.gone(node) || h.tainted(node) || len(h.replacements(node)) > 0
			if disrupted == tc.wantKept {
				t.Fatalf("disrupted = %v, want %v (DisruptionBlocked = %+v)", disrupted, !tc.wantKept, h.blocked(node))
			}
			c := h.blocked(node)
			if !tc.wantKept {
				if c != nil && c.Reason == disruption.BlockedRolloutBudget {
					t.Fatalf("DisruptionBlocked = %+v, but the node was disrupted", c)
				}
				return
			}
			want := fmt.Sprintf("pod default/%s-a cannot be evicted now: Deployment default/%s has 1 of 4 replicas unavailable (maxUnavailable 1)", app, app)
			if c == nil || c.Reason != disruption.BlockedRolloutBudget || c.Message != want {
				t.Fatalf("DisruptionBlocked = %+v, want reason %s and message %q", c, disruption.BlockedRolloutBudget, want)
			}
		})
	}
}

// A multi-node command takes no more of a controller's available pods
// than its rollout budget allows now: three nodes each holding one pod of
// a 3-replica Deployment (maxUnavailable 25%, so 1) are not merged at once;
// one node goes. With maxUnavailable 100% all three are merged into one
// replacement.
func TestMultiNodeConsolidationStaysWithinTheRolloutBudget(t *testing.T) {
	cases := map[string]struct {
		maxUnavailable string
		wantDisrupted  int
	}{
		"a budget of one": {maxUnavailable: "", wantDisrupted: 1},
		"a budget of all": {maxUnavailable: "100%", wantDisrupted: 3},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			app := fmt.Sprintf("merge%d", i)
			newPod := h.deployment(app, 3, tc.maxUnavailable)
			h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
			names := []string{app + "-x", app + "-y", app + "-z"}
			for j, n := range names {
				h.runningNode(n, nodeOpts{it: largeType}, newPod(fmt.Sprintf("%s-%d", app, j), "500m"))
			}
			h.decide()
			disrupted := 0
			for _, n := range names {
				if h.tainted(n) || h.gone(n) {
					disrupted++
				}
			}
			if disrupted != tc.wantDisrupted {
				t.Fatalf("%d nodes disrupted (%d replacements), want %d", disrupted, len(h.replacements(names...)), tc.wantDisrupted)
			}
		})
	}
}
