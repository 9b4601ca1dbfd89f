package test_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/test"
)

// reporter records what DistinctConcurrently reports instead of failing.
type reporter struct {
	testing.TB
	reported []string
}

func (e *reporter) Helper() {}

func (e *reporter) Errorf(format string, args ...any) {
	e.reported = append(e.reported, fmt.Sprintf(format, args...))
}

func TestDistinctConcurrently(t *testing.T) {
	ids := test.DistinctConcurrently(t, 8, func(i int) (string, error) { return fmt.Sprint("i-", i), nil })
	if !slices.Equal(ids, []string{"i-0", "i-1", "i-2", "i-3", "i-4", "i-5", "i-6", "i-7"}) {
		t.Errorf("ids %v, want i-0..i-7 in order", ids)
	}

	rec := &reporter{TB: t}
	test.DistinctConcurrently(rec, 4, func(i int) (string, error) { return fmt.Sprint("i-", i%2), nil })
	if len(rec.reported) != 2 {
		t.Errorf("reported %q, want the two IDs handed out twice", rec.reported)
	}
}
