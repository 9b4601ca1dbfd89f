package contract

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func identifiesItself(t *testing.T, _ context.Context, s Subject) {
	if s.Provider.Name() == "" {
		t.Error("Name() is empty")
	}
	classes := s.Provider.GetSupportedNodeClasses()
	if len(classes) == 0 {
		t.Fatal("GetSupportedNodeClasses() is empty")
	}
	for i, c := range classes {
		if c == nil {
			t.Errorf("node class %d is nil", i)
		}
	}
}

func instanceTypesHaveOfferings(t *testing.T, ctx context.Context, s Subject) {
	for _, it := range mustInstanceTypes(t, ctx, s) {
		if it.Name == "" {
			t.Fatal("an instance type has no name")
		}
		if r := it.Requirements.Get(corev1.LabelInstanceTypeStable); r == nil || !r.Has(it.Name) {
			t.Errorf("%s: requirements do not carry its instance-type label", it.Name)
		}
		if len(it.Offerings) == 0 {
			t.Errorf("%s has no offerings", it.Name)
		}
		for _, o := range it.Offerings {
			if o.Zone == "" || o.CapacityType == "" || o.Price < 0 {
				t.Errorf("%s: malformed offering %+v", it.Name, *o)
			}
		}
		if it.Allocatable.Cpu().IsZero() || it.Allocatable.Memory().IsZero() {
			t.Errorf("%s: no allocatable cpu or memory", it.Name)
		}
	}
}

func createHydrates(t *testing.T, ctx context.Context, s Subject) {
	nc := withRequests(s.NodeClaim("hydrate"), "1", "1Gi")
	created := mustCreate(t, ctx, s, nc)
	labels := created.Labels
	for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey} {
		if labels[key] == "" {
			t.Errorf("created NodeClaim has no %s label (labels %v)", key, labels)
		}
	}
	if labels[karpv1.NodePoolLabelKey] != "default" {
		t.Errorf("the NodeClaim's own label %s was not kept: %v", karpv1.NodePoolLabelKey, labels)
	}
	it := findType(mustInstanceTypes(t, ctx, s), labels[corev1.LabelInstanceTypeStable])
	if it == nil {
		t.Fatalf("launched instance type %q is not one GetInstanceTypes returns", labels[corev1.LabelInstanceTypeStable])
	}
	if !hasOffering(it, labels[corev1.LabelTopologyZone], labels[karpv1.CapacityTypeLabelKey]) {
		t.Errorf("%s has no offering in %s/%s", it.Name, labels[corev1.LabelTopologyZone], labels[karpv1.CapacityTypeLabelKey])
	}
	if !cloudprovider.Fits(nc.Spec.Resources.Requests, created.Status.Allocatable) {
		t.Errorf("allocatable %v does not cover the requests %v", created.Status.Allocatable, nc.Spec.Resources.Requests)
	}
	if created.Status.Capacity.Cpu().IsZero() {
		t.Errorf("capacity has no cpu: %v", created.Status.Capacity)
	}
}

func hasOffering(it *cloudprovider.InstanceType, zone, capacityType string) bool {
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == capacityType {
			return true
		}
	}
	return false
}

func createHonoursRequirements(t *testing.T, ctx context.Context, s Subject) {
	// The first type with an available on-demand offering: GetInstanceTypes
	// also lists types the NodeClass cannot launch right now.
	var it *cloudprovider.InstanceType
	var zone string
	for _, candidate := range mustInstanceTypes(t, ctx, s) {
		for _, o := range candidate.Offerings {
			if o.CapacityType == karpv1.CapacityTypeOnDemand && o.Available {
				it, zone = candidate, o.Zone
			}
		}
		if it != nil {
			break
		}
	}
	if it == nil {
		t.Fatal("no instance type has an available on-demand offering to test with")
	}
	nc := s.NodeClaim("honour")
	withRequirement(nc, corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zone)
	withRequirement(nc, karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand)
	withRequirement(nc, corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, it.Name)
	created := mustCreate(t, ctx, s, nc)
	want := map[string]string{
		corev1.LabelTopologyZone:       zone,
		karpv1.CapacityTypeLabelKey:    karpv1.CapacityTypeOnDemand,
		corev1.LabelInstanceTypeStable: it.Name,
	}
	for k, v := range want {
		if created.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, created.Labels[k], v)
		}
	}
}

func createLaunchesCheapest(t *testing.T, ctx context.Context, s Subject) {
	types := mustInstanceTypes(t, ctx, s)
	nc := withRequests(s.NodeClaim("cheapest"), "500m", "512Mi")
	candidates := cloudprovider.LaunchCandidates(types, nc, nil)
	if len(candidates) == 0 {
		t.Fatal("no instance type fits 500m/512Mi")
	}
	created := mustCreate(t, ctx, s, nc)
	got := cloudprovider.OfferingKey{
		InstanceType: created.Labels[corev1.LabelInstanceTypeStable],
		Zone:         created.Labels[corev1.LabelTopologyZone],
		CapacityType: created.Labels[karpv1.CapacityTypeLabelKey],
	}
	if want := candidates[0].Key(); got != want {
		t.Errorf("launched %s, want the cheapest candidate %s", got, want)
	}
}

func createIsIdempotent(t *testing.T, ctx context.Context, s Subject) {
	nc := s.NodeClaim("idempotent")
	first := mustCreate(t, ctx, s, nc)
	second := mustCreate(t, ctx, s, nc.DeepCopy())
	if first.Status.ProviderID != second.Status.ProviderID {
		t.Errorf("retried Create launched %s after %s", second.Status.ProviderID, first.Status.ProviderID)
	}
	if n := listed(t, ctx, s, first.Status.ProviderID); n != 1 {
		t.Errorf("List shows %s %d times, want once", first.Status.ProviderID, n)
	}
}

func impossibleIsInsufficientCapacity(t *testing.T, ctx context.Context, s Subject) {
	tests := map[string]*karpv1.NodeClaim{
		"unknown instance type": withRequirement(s.NodeClaim("no-such-type"),
			corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "no-such-instance-type"),
		"unknown zone": withRequirement(s.NodeClaim("no-such-zone"),
			corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "no-such-zone"),
		"requests larger than any type": withRequests(s.NodeClaim("too-big"), "100000", "1Gi"),
	}
	for name, nc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := s.Provider.Create(ctx, nc)
			if !cloudprovider.IsInsufficientCapacityError(err) {
				t.Errorf("Create returned %v, want an InsufficientCapacityError", err)
			}
		})
	}
}

func getReturnsCreated(t *testing.T, ctx context.Context, s Subject) {
	created := mustCreate(t, ctx, s, s.NodeClaim("get"))
	got, err := s.Provider.Get(ctx, created.Status.ProviderID)
	if err != nil {
		t.Fatalf("Get(%s): %v", created.Status.ProviderID, err)
	}
	if got.Status.ProviderID != created.Status.ProviderID {
		t.Errorf("Get returned providerID %q, want %q", got.Status.ProviderID, created.Status.ProviderID)
	}
	for _, key := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey} {
		if got.Labels[key] != created.Labels[key] {
			t.Errorf("Get label %s = %q, Create said %q", key, got.Labels[key], created.Labels[key])
		}
	}
}

func getUnknownIsNotFound(t *testing.T, ctx context.Context, s Subject) {
	created := mustCreate(t, ctx, s, s.NodeClaim("known"))
	unknown := created.Status.ProviderID + "-unknown"
	if _, err := s.Provider.Get(ctx, unknown); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get(%s) returned %v, want a NodeClaimNotFoundError", unknown, err)
	}
}

func deleteTerminates(t *testing.T, ctx context.Context, s Subject) {
	created := mustCreate(t, ctx, s, s.NodeClaim("delete"))
	var err error
	for i := 0; i < 3; i++ {
		if err = s.Provider.Delete(ctx, created); err != nil {
			break
		}
	}
	if !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("repeated Delete returned %v, want a NodeClaimNotFoundError once gone", err)
	}
	if _, err := s.Provider.Get(ctx, created.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get after Delete returned %v, want a NodeClaimNotFoundError", err)
	}
	if n := listed(t, ctx, s, created.Status.ProviderID); n != 0 {
		t.Errorf("List still shows the deleted instance %d times", n)
	}
}

func listIncludesCreated(t *testing.T, ctx context.Context, s Subject) {
	a := mustCreate(t, ctx, s, s.NodeClaim("list-a"))
	b := mustCreate(t, ctx, s, s.NodeClaim("list-b"))
	if a.Status.ProviderID == b.Status.ProviderID {
		t.Fatalf("two NodeClaims share providerID %s", a.Status.ProviderID)
	}
	for _, id := range []string{a.Status.ProviderID, b.Status.ProviderID} {
		if n := listed(t, ctx, s, id); n != 1 {
			t.Errorf("List shows %s %d times, want once", id, n)
		}
	}
}

func concurrentCreates(t *testing.T, ctx context.Context, s Subject) {
	const n = 6
	ids := test.DistinctConcurrently(t, n, func(i int) (string, error) {
		created, err := s.Provider.Create(ctx, s.NodeClaim(fmt.Sprintf("concurrent-%d", i)))
		if err != nil {
			return "", err
		}
		return created.Status.ProviderID, nil
	})
	for _, id := range ids {
		if listed(t, ctx, s, id) != 1 {
			t.Errorf("List does not show %s", id)
		}
	}
}

func freshNotDrifted(t *testing.T, ctx context.Context, s Subject) {
	nc := s.NodeClaim("drift")
	created := mustCreate(t, ctx, s, nc)
	// Controllers merge the hydrated labels and annotations into the
	// stored NodeClaim; IsDrifted sees that merged object.
	merged := nc.DeepCopy()
	merged.Labels, merged.Annotations = created.Labels, created.Annotations
	merged.Status = created.Status
	reason, err := s.Provider.IsDrifted(ctx, merged)
	if err != nil {
		t.Fatalf("IsDrifted: %v", err)
	}
	if reason != "" {
		t.Errorf("a fresh NodeClaim drifted: %s", reason)
	}
}

func repairPoliciesWellFormed(t *testing.T, _ context.Context, s Subject) {
	for _, p := range s.Provider.RepairPolicies() {
		if p.ConditionType == "" || p.ConditionStatus == "" || p.TolerationDuration <= 0 {
			t.Errorf("malformed repair policy %+v", p)
		}
	}
}
