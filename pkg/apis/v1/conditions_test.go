package v1_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

func statusOf(t *testing.T, set karpv1.ConditionSet, conditionType string) metav1.ConditionStatus {
	t.Helper()
	cond := set.Get(conditionType)
	if cond == nil {
		t.Fatalf("condition %s missing", conditionType)
	}
	return cond.Status
}

func TestNodeClaimReadyFollowsDependents(t *testing.T) {
	clk := clocktesting.NewFakeClock(monday)
	nodeClaim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	set := nodeClaim.StatusConditions().WithClock(clk)

	if !set.Initialize() {
		t.Fatal("Initialize() on empty conditions reported no change")
	}
	for _, ct := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized, karpv1.ConditionTypeReady} {
		if got := statusOf(t, set, ct); got != metav1.ConditionUnknown {
			t.Errorf("after Initialize %s = %s, want Unknown", ct, got)
		}
	}
	set.SetTrue(karpv1.ConditionTypeLaunched)
	set.SetTrue(karpv1.ConditionTypeRegistered)
	if got := statusOf(t, set, karpv1.ConditionTypeReady); got != metav1.ConditionUnknown {
		t.Errorf("Ready with Initialized unknown = %s, want Unknown", got)
	}
	set.SetTrue(karpv1.ConditionTypeDrifted)
	set.SetTrue(karpv1.ConditionTypeInitialized)
	if !set.IsTrue(karpv1.ConditionTypeReady) {
		t.Errorf("Ready = %s with every dependent True, want True", statusOf(t, set, karpv1.ConditionTypeReady))
	}
	if ready := set.Root(); ready.ObservedGeneration != 3 || ready.Reason == "" {
		t.Errorf("Ready = %+v, want observedGeneration 3 and a reason", ready)
	}

	clk.Step(time.Minute)
	set.SetFalse(karpv1.ConditionTypeRegistered, "MultipleNodesFound", "two nodes")
	ready := set.Root()
	if ready.Status != metav1.ConditionFalse || ready.Reason != "MultipleNodesFound" {
		t.Errorf("Ready after Registered=False is %s/%s, want False/MultipleNodesFound", ready.Status, ready.Reason)
	}
	if !ready.LastTransitionTime.Time.Equal(monday.Add(time.Minute)) {
		t.Errorf("Ready transition time = %v, want %v", ready.LastTransitionTime, monday.Add(time.Minute))
	}
	if set.IsTrue(karpv1.ConditionTypeDrifted) != true {
		t.Error("informational Drifted was changed by the root update")
	}
}

func TestConditionTransitionTimeMovesOnlyOnFlip(t *testing.T) {
	clk := clocktesting.NewFakeClock(monday)
	nodePool := &karpv1.NodePool{}
	set := nodePool.StatusConditions().WithClock(clk)

	set.SetTrue(karpv1.ConditionTypeNodeClassReady)
	clk.Step(time.Hour)
	if set.SetTrue(karpv1.ConditionTypeNodeClassReady) {
		t.Error("setting an unchanged condition reported a change")
	}
	if got := set.Get(karpv1.ConditionTypeNodeClassReady).LastTransitionTime.Time; !got.Equal(monday) {
		t.Errorf("transition time moved to %v without a status change", got)
	}
	if !set.SetTrueWithReason(karpv1.ConditionTypeNodeClassReady, "Other", "msg") {
		t.Error("changing the reason reported no change")
	}
	if got := set.Get(karpv1.ConditionTypeNodeClassReady).LastTransitionTime.Time; !got.Equal(monday) {
		t.Errorf("transition time moved to %v on a reason change", got)
	}
	set.SetFalse(karpv1.ConditionTypeNodeClassReady, "NodeClassNotFound", "")
	if got := set.Get(karpv1.ConditionTypeNodeClassReady).LastTransitionTime.Time; !got.Equal(monday.Add(time.Hour)) {
		t.Errorf("transition time = %v after a flip, want %v", got, monday.Add(time.Hour))
	}
}

func TestNodePoolReadyNeedsValidationAndNodeClass(t *testing.T) {
	nodePool := &karpv1.NodePool{}
	set := nodePool.StatusConditions().WithClock(clocktesting.NewFakeClock(monday))
	set.SetTrue(karpv1.ConditionTypeNodeClassReady)
	set.SetFalse(karpv1.ConditionTypeNodeRegistrationHealthy, "RegistrationFailed", "")
	if set.IsTrue(karpv1.ConditionTypeReady) {
		t.Fatal("Ready True without ValidationSucceeded")
	}
	set.SetTrue(karpv1.ConditionTypeValidationSucceeded)
	if !set.IsTrue(karpv1.ConditionTypeReady) {
		t.Fatal("Ready not True with ValidationSucceeded and NodeClassReady; NodeRegistrationHealthy must not count")
	}
	if !set.Clear(karpv1.ConditionTypeNodeClassReady) {
		t.Fatal("Clear reported no change")
	}
	if set.Get(karpv1.ConditionTypeNodeClassReady) != nil || !set.IsUnknown(karpv1.ConditionTypeReady) {
		t.Errorf("after clearing NodeClassReady: conditions %+v, want it gone and Ready Unknown", nodePool.Status.Conditions)
	}
}
