package instancetype_test

import "testing"

// BenchmarkListRebuild measures resolving every catalog type for one class,
// as after an unavailable-offerings mark or a price update.
func BenchmarkListRebuild(b *testing.B) {
	e := newEnv(b, nil)
	nc := nodeClass()
	for b.Loop() {
		e.provider.Flush()
		if _, err := e.provider.List(b.Context(), nc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListCached measures a List answered from the cache.
func BenchmarkListCached(b *testing.B) {
	e := newEnv(b, nil)
	nc := nodeClass()
	if _, err := e.provider.List(b.Context(), nc); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := e.provider.List(b.Context(), nc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListAfterMark measures a List after one offering was marked
// unavailable: only the marked type is rebuilt.
func BenchmarkListAfterMark(b *testing.B) {
	e := newEnv(b, nil)
	nc := nodeClass()
	if _, err := e.provider.List(b.Context(), nc); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		e.unavailable.MarkUnavailable(b.Context(), "InsufficientInstanceCapacity", "m5.large", "us-west-2a", "spot")
		if _, err := e.provider.List(b.Context(), nc); err != nil {
			b.Fatal(err)
		}
	}
}
