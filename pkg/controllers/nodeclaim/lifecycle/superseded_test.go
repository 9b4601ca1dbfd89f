package lifecycle

import "testing"

func TestSupersededVersions(t *testing.T) {
	s := newSuperseded()
	s.add("a", "10")
	s.add("a", "11")
	for _, rv := range []string{"10", "11"} {
		if !s.stale("a", rv) {
			t.Errorf("version %s we replaced is not stale", rv)
		}
	}
	if s.stale("b", "10") {
		t.Error("another NodeClaim's version is stale")
	}
	// The cache caught up: the entry goes, and old versions are no longer tracked.
	if s.stale("a", "12") {
		t.Error("the version after our writes is stale")
	}
	if s.stale("a", "10") {
		t.Error("entry kept after the cache caught up")
	}
	s.add("c", "1")
	s.forget("c")
	if s.stale("c", "1") {
		t.Error("forgotten entry still stale")
	}
}
