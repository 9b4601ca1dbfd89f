package selector_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/selector"
)

func listing(objs ...string) func(context.Context) ([]string, error) {
	return func(context.Context) ([]string, error) { return objs, nil }
}

func TestResolve(t *testing.T) {
	ids := map[int]string{0: "b", 1: "zz"} // term 1 names an id nothing has
	queries := []selector.Query[string]{
		{Terms: []int{0, 1}, List: listing("b"), Answers: func(i int, obj string) bool { return ids[i] == obj }},
		{Terms: []int{2}, List: listing("c", "a", "b")},
		{Terms: []int{3}, List: listing()},
	}
	got, err := selector.Resolve(t.Context(), queries, func(s string) string { return s })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, got.Selected); diff != "" {
		t.Errorf("selected (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 3}, got.Unmatched); diff != "" {
		t.Errorf("unmatched terms (-want +got):\n%s", diff)
	}
	clone := got.Clone()
	clone.Selected[0], clone.Unmatched[0] = "changed", 9
	if got.Selected[0] != "a" || got.Unmatched[0] != 1 {
		t.Errorf("changing a clone changed the resolution: %+v", got)
	}
}

func TestResolveReturnsTheFirstError(t *testing.T) {
	boom := errors.New("throttled")
	queries := []selector.Query[string]{
		{Terms: []int{0}, List: func(context.Context) ([]string, error) { return nil, boom }},
		{Terms: []int{1}, List: func(context.Context) ([]string, error) { t.Error("a query after a failure ran"); return nil, nil }},
	}
	if _, err := selector.Resolve(t.Context(), queries, func(s string) string { return s }); !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}
