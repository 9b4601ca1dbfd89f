package lifecycle_test

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestLaunchAddsFinalizerAndHydratesStatus(t *testing.T) {
	cp, c := setup(t)
	nc := createNodeClaim(t, test.MakeNodeClaim("launch").NodePool("default").Label("team", "a").Obj())
	mustReconcile(t, c, nc.Name)

	got := getNodeClaim(t, nc.Name)
	if !slices.Contains(got.Finalizers, karpv1.TerminationFinalizer) {
		t.Errorf("finalizers = %v, want %s", got.Finalizers, karpv1.TerminationFinalizer)
	}
	if cond := condition(got, karpv1.ConditionTypeLaunched); cond.Status != metav1.ConditionTrue {
		t.Errorf("Launched = %+v, want True", cond)
	}
	instances, _ := cp.List(t.Context())
	if len(instances) != 1 {
		t.Fatalf("provider has %d instances, want 1", len(instances))
	}
	if got.Status.ProviderID != instances[0].Status.ProviderID || got.Status.ProviderID == "" {
		t.Errorf("providerID = %q, want the instance's %q", got.Status.ProviderID, instances[0].Status.ProviderID)
	}
	if got.Status.ImageID != fake.ImageID {
		t.Errorf("imageID = %q, want %q", got.Status.ImageID, fake.ImageID)
	}
	if got.Status.Capacity.Cpu().IsZero() || got.Status.Allocatable.Memory().IsZero() {
		t.Errorf("capacity/allocatable not hydrated: %v / %v", got.Status.Capacity, got.Status.Allocatable)
	}
	for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey} {
		if got.Labels[key] == "" {
			t.Errorf("label %s missing: %v", key, got.Labels)
		}
	}
	if got.Labels["team"] != "a" || got.Labels[karpv1.NodePoolLabelKey] != "default" {
		t.Errorf("NodeClaim's own labels lost: %v", got.Labels)
	}
	h.WaitForEvent(t, "NodeClaim", nc.Name, lifecycle.ReasonLaunched)

	// Launched is recorded: another pass does not call Create again.
	mustReconcile(t, c, nc.Name)
	if n := len(cp.CreateCalls()); n != 1 {
		t.Errorf("Create called %d times, want 1", n)
	}
}

func TestRelaunchAfterCrashReusesTheInstance(t *testing.T) {
	cp, c := setup(t)
	nc := createNodeClaim(t, test.MakeNodeClaim("crash").NodePool("default").Obj())
	// A previous controller launched the instance and died before it
	// recorded the launch on the NodeClaim.
	before, err := cp.Create(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	mustReconcile(t, c, nc.Name)

	instances, _ := cp.List(t.Context())
	if len(instances) != 1 {
		t.Fatalf("provider has %d instances after the restart, want 1", len(instances))
	}
	if got := getNodeClaim(t, nc.Name); got.Status.ProviderID != before.Status.ProviderID {
		t.Errorf("providerID = %q, want the first launch's %q", got.Status.ProviderID, before.Status.ProviderID)
	}
}

func TestLaunchErrorsThatDeleteTheNodeClaim(t *testing.T) {
	for name, tc := range map[string]struct {
		err       error
		wantEvent string
	}{
		"insufficient capacity": {
			err:       cloudprovider.NewInsufficientCapacityError(errors.New("no spot left")),
			wantEvent: lifecycle.ReasonInsufficientCapacityError,
		},
		"nodeclass not ready": {
			err:       cloudprovider.NewNodeClassNotReadyError(errors.New("not ready")),
			wantEvent: lifecycle.ReasonNodeClassNotReady,
		},
	} {
		t.Run(name, func(t *testing.T) {
			cp, c := setup(t)
			cp.SetNextCreateError(tc.err)
			nc := createNodeClaim(t, test.MakeNodeClaim("doomed").NodePool("default").Obj())
			mustReconcile(t, c, nc.Name)

			got := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
			if h.Get(t, got) && got.DeletionTimestamp.IsZero() {
				t.Fatalf("nodeclaim still live after %v", tc.err)
			}
			instances, _ := cp.List(t.Context())
			if len(instances) != 0 {
				t.Errorf("provider has %d instances, want 0", len(instances))
			}
			h.WaitForEvent(t, "NodeClaim", nc.Name, tc.wantEvent)
		})
	}
}

func TestLaunchFailureIsRetriedWithTheReasonOnTheCondition(t *testing.T) {
	for name, tc := range map[string]struct {
		err        error
		wantReason string
	}{
		"plain error":  {err: errors.New("api throttled"), wantReason: lifecycle.ReasonLaunchFailed},
		"create error": {err: cloudprovider.NewCreateError(errors.New("quota"), "QuotaExceeded", "vCPU quota"), wantReason: "QuotaExceeded"},
	} {
		t.Run(name, func(t *testing.T) {
			cp, c := setup(t)
			cp.SetNextCreateError(tc.err)
			nc := createNodeClaim(t, test.MakeNodeClaim("retry").NodePool("default").Obj())
			if err := reconcileNodeClaim(t, c, nc.Name); err == nil {
				t.Fatal("reconcile succeeded, want the launch error")
			}
			got := getNodeClaim(t, nc.Name)
			cond := condition(got, karpv1.ConditionTypeLaunched)
			if cond.Status != metav1.ConditionUnknown || cond.Reason != tc.wantReason {
				t.Errorf("Launched = %s/%s, want Unknown/%s", cond.Status, cond.Reason, tc.wantReason)
			}
			// The next attempt succeeds.
			mustReconcile(t, c, nc.Name)
			if cond := condition(getNodeClaim(t, nc.Name), karpv1.ConditionTypeLaunched); cond.Status != metav1.ConditionTrue {
				t.Errorf("Launched after retry = %+v, want True", cond)
			}
		})
	}
}

func TestNodeClaimsOfOtherProvidersAreLeftAlone(t *testing.T) {
	cp, c := setup(t)
	nc := createNodeClaim(t, test.MakeNodeClaim("foreign").NodePool("default").
		NodeClassRef(&karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}).Obj())
	mustReconcile(t, c, nc.Name)
	if n := len(cp.CreateCalls()); n != 0 {
		t.Errorf("Create called %d times for a NodeClaim of another provider", n)
	}
	if got := getNodeClaim(t, nc.Name); len(got.Finalizers) != 0 || len(got.Status.Conditions) != 0 {
		t.Errorf("foreign NodeClaim was touched: finalizers %v, conditions %v", got.Finalizers, got.Status.Conditions)
	}
}
