package instancetype_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
)

// classWithAMIs is nodeClass() with resolved AMIs: one per architecture,
// named by suffix ("ami-amd64-"+suffix, "ami-arm64-"+suffix).
func classWithAMIs(name, suffix string) *awsv1.EC2NodeClass {
	nc := nodeClass()
	nc.Name = name
	for _, arch := range []string{"amd64", "arm64"} {
		nc.Status.AMIs = append(nc.Status.AMIs, awsv1.AMI{ID: "ami-" + arch + "-" + suffix, Name: "al2023-" + arch + "-" + suffix,
			Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}})
	}
	return nc
}

// memoryOf lists the class's instance types and returns the type's memory
// capacity and allocatable.
func memoryOf(t *testing.T, e env, nc *awsv1.EC2NodeClass, name string) (capacity, allocatable resource.Quantity) {
	t.Helper()
	types, err := e.provider.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	it := find(t, types, name)
	return it.Capacity[corev1.ResourceMemory], it.Allocatable[corev1.ResourceMemory]
}

func TestDiscoveredMemoryCapacity(t *testing.T) {
	e := newEnv(t, nil)
	classA, classB := classWithAMIs("a", "v1"), classWithAMIs("b", "v2")
	// m5.large: 8192 MiB less the 7.5% VM overhead estimate, rounded up.
	estimate := resource.MustParse("7577Mi")
	gotCapacity, gotAllocatable := memoryOf(t, e, classA, "m5.large")
	if gotCapacity.Cmp(estimate) != 0 {
		t.Fatalf("m5.large memory before any Node = %s, want the estimate %s", gotCapacity.String(), estimate.String())
	}
	estimateAllocatable := gotAllocatable

	// 1. A registered Node reporting less than the estimate: the type's
	// memory for every class with these AMIs is the Node's from now on,
	// and allocatable shrinks by the same amount.
	low := resource.MustParse("7400Mi")
	if !e.provider.RecordMemoryCapacity(t.Context(), classA, "m5.large", low) {
		t.Error("RecordMemoryCapacity(lower than the estimate) reported no change")
	}
	gotCapacity, gotAllocatable = memoryOf(t, e, classA, "m5.large")
	if gotCapacity.Cmp(low) != 0 {
		t.Errorf("m5.large memory after a Node reported %s = %s, want the Node's", low.String(), gotCapacity.String())
	}
	wantAllocatable := estimateAllocatable.DeepCopy()
	wantAllocatable.Sub(estimate)
	wantAllocatable.Add(low)
	if gotAllocatable.Cmp(wantAllocatable) != 0 {
		t.Errorf("m5.large allocatable memory = %s, want %s (the estimate's, less what the Node lacks)", gotAllocatable.String(), wantAllocatable.String())
	}
	sameAMIs := classWithAMIs("a-twin", "v1")
	slices.Reverse(sameAMIs.Status.AMIs)
	if got, _ := memoryOf(t, e, sameAMIs, "m5.large"); got.Cmp(low) != 0 {
		t.Errorf("m5.large memory of another class with the same AMIs (listed in another order) = %s, want the learnt %s", got.String(), low.String())
	}
	if got, _ := memoryOf(t, e, classB, "m5.large"); got.Cmp(estimate) != 0 {
		t.Errorf("m5.large memory of a class with other AMIs = %s, want the estimate %s", got.String(), estimate.String())
	}
	if got, _ := memoryOf(t, e, classA, "m5.xlarge"); got.Cmp(resource.MustParse("15155Mi")) != 0 {
		t.Errorf("m5.xlarge memory = %s, want its own estimate 15155Mi", got.String())
	}

	// 2. A Node reporting more does not raise it (the smallest seen wins);
	// one reporting even less lowers it again.
	if e.provider.RecordMemoryCapacity(t.Context(), classA, "m5.large", resource.MustParse("7500Mi")) {
		t.Error("RecordMemoryCapacity(higher than learnt) reported a change")
	}
	if got, _ := memoryOf(t, e, classA, "m5.large"); got.Cmp(low) != 0 {
		t.Errorf("m5.large memory after a Node reported more = %s, want the smaller %s", got.String(), low.String())
	}
	if e.provider.RecordMemoryCapacity(t.Context(), classA, "m5.large", low) {
		t.Error("RecordMemoryCapacity(equal to learnt) reported a change")
	}
	lower := resource.MustParse("7350Mi")
	if !e.provider.RecordMemoryCapacity(t.Context(), classA, "m5.large", lower) {
		t.Error("RecordMemoryCapacity(lower than learnt) reported no change")
	}
	if got, _ := memoryOf(t, e, classA, "m5.large"); got.Cmp(lower) != 0 {
		t.Errorf("m5.large memory after a Node reported less = %s, want %s", got.String(), lower.String())
	}

	// 3. The class's AMIs change: what Nodes of the old AMIs reported no
	// longer applies.
	upgraded := classWithAMIs("a", "v3")
	if got, _ := memoryOf(t, e, upgraded, "m5.large"); got.Cmp(estimate) != 0 {
		t.Errorf("m5.large memory after the class's AMIs changed = %s, want the estimate %s", got.String(), estimate.String())
	}
}

// What a Node reports is the truth, also above the estimate: with nothing
// learnt yet, the first report is used whatever it is (upstream caches the
// first value, then only lower or equal ones).
func TestDiscoveredMemoryCapacityAboveTheEstimate(t *testing.T) {
	e := newEnv(t, nil)
	nc := classWithAMIs("a", "v1")
	high := resource.MustParse("7800Mi")
	if !e.provider.RecordMemoryCapacity(t.Context(), nc, "m5.large", high) {
		t.Error("RecordMemoryCapacity(first report, above the estimate) reported no change")
	}
	if got, _ := memoryOf(t, e, nc, "m5.large"); got.Cmp(high) != 0 {
		t.Errorf("m5.large memory = %s, want the Node's %s", got.String(), high.String())
	}
}

func TestDiscoveredMemoryCapacityExpires(t *testing.T) {
	e := newEnv(t, nil)
	nc := classWithAMIs("a", "v1")
	low := resource.MustParse("7000Mi")
	e.provider.RecordMemoryCapacity(t.Context(), nc, "m5.large", low)
	e.clock.Step(instancetype.DiscoveredCapacityTTL / 2)
	// A Node confirming the value restarts its TTL.
	e.provider.RecordMemoryCapacity(t.Context(), nc, "m5.large", low)
	e.clock.Step(instancetype.DiscoveredCapacityTTL / 2)
	if got, _ := memoryOf(t, e, nc, "m5.large"); got.Cmp(low) != 0 {
		t.Errorf("m5.large memory one TTL after the first Node, half after the last = %s, want the learnt %s", got.String(), low.String())
	}
	e.clock.Step(instancetype.DiscoveredCapacityTTL / 2)
	if got, _ := memoryOf(t, e, nc, "m5.large"); got.Cmp(resource.MustParse("7577Mi")) != 0 {
		t.Errorf("m5.large memory a TTL after the last Node = %s, want the estimate 7577Mi", got.String())
	}
	// Expired, a higher value is learnt again.
	if !e.provider.RecordMemoryCapacity(t.Context(), nc, "m5.large", resource.MustParse("7500Mi")) {
		t.Error("RecordMemoryCapacity after the TTL reported no change")
	}
}

func TestDiscoveredMemoryCapacityIgnoresEmptyReports(t *testing.T) {
	e := newEnv(t, nil)
	nc := classWithAMIs("a", "v1")
	for name, memory := range map[string]resource.Quantity{"zero": resource.MustParse("0"), "negative": resource.MustParse("-1Mi")} {
		if e.provider.RecordMemoryCapacity(t.Context(), nc, "m5.large", memory) {
			t.Errorf("%s memory was learnt", name)
		}
	}
	if got, _ := memoryOf(t, e, nc, "m5.large"); got.Cmp(resource.MustParse("7577Mi")) != 0 {
		t.Errorf("m5.large memory = %s, want the estimate 7577Mi", got.String())
	}
}
