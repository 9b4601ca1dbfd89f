package lifecycle

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// superseded remembers, per NodeClaim, the resourceVersions this controller
// replaced with its own writes. A reconcile that starts from one of them
// reads a cache that has not yet seen our write: the write's watch event is
// on its way and will trigger a fresh reconcile, so acting now would only
// repeat work (a second Create call) and fail the optimistic lock.
//
// The cache only moves forward, so a version outside the set means it has
// caught up with (or gone past) our writes and the entry is dropped.
type superseded struct {
	mu    sync.Mutex
	byUID map[types.UID]sets.Set[string]
}

func newSuperseded() *superseded {
	return &superseded{byUID: map[types.UID]sets.Set[string]{}}
}

// add records that the version was replaced by our write.
func (s *superseded) add(uid types.UID, resourceVersion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byUID[uid] == nil {
		s.byUID[uid] = sets.New[string]()
	}
	s.byUID[uid].Insert(resourceVersion)
}

// stale reports whether the version is one we replaced; otherwise it
// forgets the NodeClaim's entry.
func (s *superseded) stale(uid types.UID, resourceVersion string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byUID[uid].Has(resourceVersion) {
		return true
	}
	delete(s.byUID, uid)
	return false
}

// forget drops the NodeClaim's entry.
func (s *superseded) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byUID, uid)
}
