package fake

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/test/contract"
)

func newNodeClaim(name string) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}},
		Spec:       karpv1.NodeClaimSpec{NodeClassRef: kwokv1alpha1.NodeClassReference("default")},
	}
}

func TestContract(t *testing.T) {
	contract.Run(t, func(*testing.T) contract.Subject {
		return contract.Subject{Provider: New(), NodeClaim: newNodeClaim}
	})
}

func onlyType(name string) *karpv1.NodeClaim {
	nc := newNodeClaim("nc")
	nc.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{name}},
	}
	return nc
}

func launchedKey(nc *karpv1.NodeClaim) cloudprovider.OfferingKey {
	return cloudprovider.OfferingKey{
		InstanceType: nc.Labels[corev1.LabelInstanceTypeStable],
		Zone:         nc.Labels[corev1.LabelTopologyZone],
		CapacityType: nc.Labels[karpv1.CapacityTypeLabelKey],
	}
}

func TestInsufficientCapacityFallsBackThenFails(t *testing.T) {
	ctx := t.Context()
	p := New()
	spot1 := cloudprovider.OfferingKey{InstanceType: "default-instance-type", Zone: "test-zone-1", CapacityType: karpv1.CapacityTypeSpot}
	spot2 := cloudprovider.OfferingKey{InstanceType: "default-instance-type", Zone: "test-zone-2", CapacityType: karpv1.CapacityTypeSpot}

	created, err := p.Create(ctx, onlyType("default-instance-type"))
	if err != nil {
		t.Fatal(err)
	}
	if got := launchedKey(created); got != spot1 {
		t.Fatalf("launched %s, want the cheapest offering %s", got, spot1)
	}

	p.Reset()
	p.SetInsufficientCapacity(spot1)
	created, err = p.Create(ctx, onlyType("default-instance-type"))
	if err != nil {
		t.Fatal(err)
	}
	if got := launchedKey(created); got != spot2 {
		t.Errorf("with %s refused launched %s, want %s", spot1, got, spot2)
	}

	p.Reset()
	p.SetInsufficientCapacity(spot1, spot2)
	nc := onlyType("default-instance-type")
	nc.Spec.Requirements = append(nc.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
		Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeSpot}})
	_, err = p.Create(ctx, nc)
	var ice *cloudprovider.InsufficientCapacityError
	if !errors.As(err, &ice) {
		t.Fatalf("Create returned %v, want an InsufficientCapacityError", err)
	}
	if diff := cmp.Diff([]cloudprovider.OfferingKey{spot1, spot2}, ice.Offerings); diff != "" {
		t.Errorf("refused offerings (-want,+got):\n%s", diff)
	}
	if list, _ := p.List(ctx); len(list) != 0 {
		t.Errorf("a refused Create left %d instances", len(list))
	}
}

func TestInjectedErrorsApplyOnce(t *testing.T) {
	ctx := t.Context()
	p := New()
	boom := errors.New("boom")
	p.SetNextCreateError(boom)
	if _, err := p.Create(ctx, newNodeClaim("a")); !errors.Is(err, boom) {
		t.Fatalf("Create returned %v, want the injected error", err)
	}
	created, err := p.Create(ctx, newNodeClaim("a"))
	if err != nil {
		t.Fatalf("the second Create failed too: %v", err)
	}
	p.SetNextGetError(boom)
	if _, err := p.Get(ctx, created.Status.ProviderID); !errors.Is(err, boom) {
		t.Errorf("Get returned %v, want the injected error", err)
	}
	if _, err := p.Get(ctx, created.Status.ProviderID); err != nil {
		t.Errorf("the second Get failed: %v", err)
	}
	p.SetNextDeleteError(boom)
	if err := p.Delete(ctx, created); !errors.Is(err, boom) {
		t.Errorf("Delete returned %v, want the injected error", err)
	}
	if err := p.Delete(ctx, created); err != nil {
		t.Errorf("the second Delete failed: %v", err)
	}
	if got := len(p.CreateCalls()); got != 2 {
		t.Errorf("recorded %d create calls, want 2", got)
	}
	if diff := cmp.Diff([]string{created.Status.ProviderID, created.Status.ProviderID}, p.GetCalls()); diff != "" {
		t.Errorf("get calls (-want,+got):\n%s", diff)
	}
	if got := len(p.DeleteCalls()); got != 2 {
		t.Errorf("recorded %d delete calls, want 2", got)
	}
}

func TestAllowedCreateCallsCountsLaunchesNotRetries(t *testing.T) {
	ctx := t.Context()
	p := New()
	p.SetAllowedCreateCalls(1)
	a := newNodeClaim("a")
	if _, err := p.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create(ctx, a); err != nil {
		t.Errorf("retrying the launched NodeClaim failed: %v", err)
	}
	if _, err := p.Create(ctx, newNodeClaim("b")); err == nil {
		t.Error("a second launch succeeded past the allowed calls")
	}
}

func TestPerNodePoolInstanceTypesAndErrors(t *testing.T) {
	ctx := t.Context()
	p := New()
	small := NewInstanceType(InstanceTypeOptions{Name: "only-for-team"})
	p.SetInstanceTypesForNodePool("team", small)
	got, err := p.GetInstanceTypes(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	if err != nil || len(got) != 1 || got[0].Name != "only-for-team" {
		t.Errorf("team NodePool sees %d types (err %v), want only-for-team", len(got), err)
	}
	nc := newNodeClaim("t")
	nc.Labels[karpv1.NodePoolLabelKey] = "team"
	created, err := p.Create(ctx, nc)
	if err != nil || created.Labels[corev1.LabelInstanceTypeStable] != "only-for-team" {
		t.Errorf("Create for the team NodePool launched %v (err %v)", created.Labels[corev1.LabelInstanceTypeStable], err)
	}
	boom := errors.New("boom")
	p.SetInstanceTypesError("team", boom)
	if _, err := p.GetInstanceTypes(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "team"}}); !errors.Is(err, boom) {
		t.Errorf("GetInstanceTypes returned %v, want the configured error", err)
	}
	if got, _ := p.GetInstanceTypes(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "other"}}); len(got) != len(DefaultInstanceTypes()) {
		t.Errorf("another NodePool sees %d types, want the defaults", len(got))
	}
}

func TestProviderIDsAreDeterministic(t *testing.T) {
	ctx := t.Context()
	p := New()
	a, _ := p.Create(ctx, newNodeClaim("node-a"))
	if a.Status.ProviderID != "fake://node-a" {
		t.Errorf("providerID = %q, want fake://node-a", a.Status.ProviderID)
	}
	again := newNodeClaim("node-a")
	again.UID = "another-uid"
	b, _ := p.Create(ctx, again)
	if b.Status.ProviderID != "fake://node-a-2" {
		t.Errorf("a second NodeClaim of the same name got %q, want fake://node-a-2", b.Status.ProviderID)
	}
}

func TestDrift(t *testing.T) {
	ctx := t.Context()
	p := New()
	created, _ := p.Create(ctx, newNodeClaim("a"))
	p.SetDrifted(created.Status.ProviderID, cloudprovider.NodeClassDrift)
	if reason, _ := p.IsDrifted(ctx, created); reason != cloudprovider.NodeClassDrift {
		t.Errorf("IsDrifted = %q, want %q", reason, cloudprovider.NodeClassDrift)
	}
	p.SetDrifted(created.Status.ProviderID, "")
	if reason, _ := p.IsDrifted(ctx, created); reason != "" {
		t.Errorf("IsDrifted after clearing = %q", reason)
	}
}
