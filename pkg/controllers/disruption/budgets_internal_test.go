package disruption

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// stateNodeOpts shape a managed node of the pure tests (pureStateNode):
// a Node, Ready unless notReady, and its NodeClaim, initialized unless
// uninitialized.
type stateNodeOpts struct {
	notReady, uninitialized, terminating, marked bool
	// blocked is the NodeClaim's DisruptionBlocked condition (reason,
	// message), if any.
	blocked *blocker
}

func pureStateNode(name, pool string, o stateNodeOpts) *state.StateNode {
	ready := corev1.ConditionTrue
	if o.notReady {
		ready = corev1.ConditionFalse
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{karpv1.NodePoolLabelKey: pool}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: pool}}}
	if !o.uninitialized {
		nc.StatusConditions().SetTrue(karpv1.ConditionTypeInitialized)
	}
	if o.terminating {
		nc.StatusConditions().SetTrue(karpv1.ConditionTypeInstanceTerminating)
	}
	if o.blocked != nil {
		nc.StatusConditions().SetTrueWithReason(ConditionTypeDisruptionBlocked, o.blocked.reason, o.blocked.message)
	}
	return &state.StateNode{Node: node, NodeClaim: nc, MarkedForDeletion: o.marked}
}

func pureWorld(now time.Time, pools []*karpv1.NodePool, nodes ...*state.StateNode) *world {
	w := &world{now: now, nodePools: map[string]*karpv1.NodePool{}, blocked: map[string]blocker{}, stateNodes: nodes}
	for _, np := range pools {
		w.nodePools[np.Name] = np
		w.poolNames = append(w.poolNames, np.Name)
	}
	return w
}

func poolWithBudgets(name string, budgets ...karpv1.Budget) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	np.Spec.Disruption.Budgets = budgets
	return np
}

func TestBudgetsForCountsInitializedNodesAndSubtractsBusyOnes(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	nodes := []*state.StateNode{
		pureStateNode("a", "default", stateNodeOpts{}),
		pureStateNode("b", "default", stateNodeOpts{}),
		pureStateNode("c", "default", stateNodeOpts{}),
		pureStateNode("d", "default", stateNodeOpts{}),
		pureStateNode("marked", "default", stateNodeOpts{marked: true}),
		pureStateNode("not-ready", "default", stateNodeOpts{notReady: true}),
		// Neither counts towards the pool's size.
		pureStateNode("launching", "default", stateNodeOpts{uninitialized: true}),
		pureStateNode("terminating", "default", stateNodeOpts{terminating: true}),
		pureStateNode("other", "other", stateNodeOpts{}),
	}
	pools := []*karpv1.NodePool{
		poolWithBudgets("default", karpv1.Budget{Nodes: "50%"}, karpv1.Budget{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}),
		poolWithBudgets("other", karpv1.Budget{Nodes: "1"}),
	}
	tests := map[karpv1.DisruptionReason]Budgets{
		// 50% of the 6 counted nodes is 3, less the 2 already busy.
		karpv1.DisruptionReasonEmpty: {"default": 1, "other": 1},
		// Drift's budget is 0: never below zero.
		karpv1.DisruptionReasonDrifted: {"default": 0, "other": 1},
	}
	for reason, want := range tests {
		t.Run(string(reason), func(t *testing.T) {
			got, err := budgetsFor(pureWorld(now, pools, nodes...), reason)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("budgets (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestBudgetsForNamesTheNodePoolWhoseBudgetIsInvalid(t *testing.T) {
	bad := "not a schedule"
	oneHour := metav1.Duration{Duration: time.Hour}
	pools := []*karpv1.NodePool{poolWithBudgets("broken", karpv1.Budget{Nodes: "1", Schedule: &bad, Duration: &oneHour})}
	_, err := budgetsFor(pureWorld(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), pools, pureStateNode("a", "broken", stateNodeOpts{})), karpv1.DisruptionReasonEmpty)
	if err == nil || !strings.Contains(err.Error(), "nodepool broken") {
		t.Errorf("error = %v, want one naming nodepool broken", err)
	}
}

func TestWithinBudgetKeepsTheFirstCandidatesOfEachPool(t *testing.T) {
	cand := func(name, pool string) *Candidate {
		return &Candidate{StateNode: pureStateNode(name, pool, stateNodeOpts{}), NodePool: poolWithBudgets(pool)}
	}
	cands := []*Candidate{cand("a1", "a"), cand("a2", "a"), cand("b1", "b"), cand("a3", "a"), cand("c1", "c")}
	allowed, over := withinBudget(Budgets{"a": 1, "b": 0, "c": 5}, cands)
	names := func(cs []*Candidate) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.Name())
		}
		return out
	}
	if diff := cmp.Diff([]string{"a1", "c1"}, names(allowed)); diff != "" {
		t.Errorf("allowed (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a2", "b1", "a3"}, names(over)); diff != "" {
		t.Errorf("over budget (-want,+got):\n%s", diff)
	}
}
