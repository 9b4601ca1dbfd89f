package overlay

import (
	"maps"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/sets"
)

// Store holds the NodeOverlay controller's latest evaluation for the
// decorator. It is safe for concurrent use; an update replaces the whole
// evaluation at once.
type Store struct {
	current atomic.Pointer[snapshot]
}

// snapshot is one evaluation: the overlays to apply, the generation of
// every NodeOverlay it saw (valid or not), and the NodePools it covered.
type snapshot struct {
	applied     []Overlay
	generations map[string]int64
	nodePools   sets.Set[string]
}

// NewStore returns a store that has seen no evaluation yet: the decorator
// refuses instance types until the first one.
func NewStore() *Store { return &Store{} }

// Update publishes an evaluation. generations maps the name of every
// NodeOverlay the evaluation read to its metadata.generation; nodePools
// are the NodePools whose instance types it checked.
func (s *Store) Update(applied []Overlay, generations map[string]int64, nodePools []string) {
	s.current.Store(&snapshot{applied: applied, generations: maps.Clone(generations), nodePools: sets.New(nodePools...)})
}

// Evaluated reports whether an evaluation was published.
func (s *Store) Evaluated() bool { return s.current.Load() != nil }

func (s *Store) load() *snapshot { return s.current.Load() }
