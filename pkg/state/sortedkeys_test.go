package state

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestSortedKeysOrdersByNamespaceThenName(t *testing.T) {
	names := map[types.NamespacedName]int{
		{Namespace: "team-b", Name: "a"}: 0,
		{Namespace: "team", Name: "z"}:   0,
		{Namespace: "team-a", Name: "b"}: 0,
		{Namespace: "team-a", Name: "a"}: 0,
	}
	want := []types.NamespacedName{
		{Namespace: "team", Name: "z"}, {Namespace: "team-a", Name: "a"},
		{Namespace: "team-a", Name: "b"}, {Namespace: "team-b", Name: "a"},
	}
	if got := sortedKeys(names); !slices.Equal(got, want) {
		t.Errorf("sortedKeys = %v, want %v", got, want)
	}
	if got := sortedKeys(map[string]bool{"b": true, "a": true, "c": true}); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("sortedKeys = %v, want [a b c]", got)
	}
}

// BenchmarkSortedKeys sorts the keys of a thousand pods, as the
// provisioner's view does on every pass.
func BenchmarkSortedKeys(b *testing.B) {
	pods := map[types.NamespacedName]int{}
	for i := range 1000 {
		pods[types.NamespacedName{Namespace: "default", Name: fmt.Sprintf("web-%05d", i)}] = i
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = sortedKeys(pods)
	}
}
