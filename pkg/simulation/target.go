package simulation

import (
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// target is somewhere pods can go: an existing (or in-flight) node, or a
// NodeClaim opened during this solve.
type target struct {
	id       int
	existing *Node
	nodeReqs scheduling.Requirements // existing: its labels (∩ in-flight requirements)
	nodeTnts scheduling.Taints       // existing: taints that apply
	used     scheduling.Vector
	free     scheduling.Vector // room left on the current shape
	ports    []scheduling.HostPort
	pods     []*podInfo
	compat   []verdict // existing: by variant.shared, whether its pods fit the node's labels and taints
	doms     []dom     // existing: by key id
	closed   bool      // existing: takes no pod (a Settling node in a consolidation)
	// NodeClaims only:
	entry   *entry
	cur     int // pool type index of the cheapest instance type that fits
	relaxed bool
	claim   int     // index in solver.claims
	into    *target // set when merged into another NodeClaim (see merge.go)
	dropped bool    // set when emptied into others (see empty.go)
}

// gone reports whether compaction merged or emptied the NodeClaim away.
func (t *target) gone() bool { return t.into != nil || t.dropped }

// taints are the taints pods must tolerate on the target.
func (t *target) taints() scheduling.Taints {
	if t.existing != nil {
		return t.nodeTnts
	}
	return t.entry.pool.taints
}

// price is what the NodeClaim costs on its current shape.
func (t *target) price() float64 { return t.entry.price[t.cur] }

// refreshFree recomputes the room left on the current shape.
func (s *solver) refreshFree(t *target) {
	it := t.entry.pool.types[t.cur]
	over := s.overhead(t.entry, t.cur)
	for i := range t.free {
		t.free[i] = it.alloc[i] - over[i] - t.used[i]
	}
}
