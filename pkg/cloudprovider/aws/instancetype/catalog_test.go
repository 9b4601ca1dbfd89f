package instancetype_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
)

// TestAllocatableMatchesTheCatalog computes every type of the embedded EC2
// catalog (upstream's published values: AL2023, no volumes, 7.5% VM
// overhead, no reserved ENIs) from DescribeInstanceTypes records and
// compares allocatable and labels with what was published.
func TestAllocatableMatchesTheCatalog(t *testing.T) {
	env := newEnv(t, nil)
	types, err := env.provider.List(t.Context(), nodeClass())
	if err != nil {
		t.Fatal(err)
	}
	var f catalog.File
	if err := json.Unmarshal(instancetypes.EC2, &f); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for i, it := range types {
		got[it.Name] = i
	}
	matched, allocatableMismatches, labelMismatches := 0, 0, 0
	for _, want := range f.InstanceTypes {
		i, ok := got[want.Name]
		if !ok {
			t.Errorf("%s: not listed", want.Name)
			continue
		}
		it := types[i]
		ok = true
		if diff := resourceDiff(want.Allocatable, it.Allocatable); diff != "" {
			allocatableMismatches++
			ok = false
			if allocatableMismatches <= 20 {
				t.Errorf("%s allocatable (want, got): %s", want.Name, diff)
			}
		}
		labels := it.Requirements.Labels()
		for key, value := range want.Labels {
			if labels[key] != value {
				labelMismatches++
				ok = false
				if labelMismatches <= 20 {
					t.Errorf("%s label %s = %q, want %q", want.Name, key, labels[key], value)
				}
			}
		}
		if ok {
			matched++
		}
	}
	t.Logf("%d of %d catalog types match in allocatable and labels", matched, len(f.InstanceTypes))
	if matched != len(f.InstanceTypes) {
		t.Errorf("%d allocatable and %d label mismatches", allocatableMismatches, labelMismatches)
	}
}

// resourceDiff lists the resources whose quantities differ, zero counting
// as absent.
func resourceDiff(want, got corev1.ResourceList) string {
	names := map[corev1.ResourceName]bool{}
	for n, q := range want {
		if !q.IsZero() {
			names[n] = true
		}
	}
	for n, q := range got {
		if !q.IsZero() {
			names[n] = true
		}
	}
	var diffs []string
	for n := range names {
		w, g := want[n], got[n]
		if w.Cmp(g) != 0 {
			diffs = append(diffs, string(n)+" "+w.String()+" vs "+g.String())
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}
