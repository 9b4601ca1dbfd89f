package static

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ready := func(name string, age time.Duration, pods int) member {
		return member{name: name, launched: true, initialized: true, pods: pods, created: t0.Add(-age)}
	}
	for name, tc := range map[string]struct {
		replicas, limit int64
		members         []member
		wantCreate      int
		wantRemove      []string
		wantCapped      bool
	}{
		"an empty pool launches its replicas": {replicas: 3, limit: -1, wantCreate: 3},
		"a full pool does nothing": {replicas: 2, limit: -1,
			members: []member{ready("a", time.Hour, 0), ready("b", time.Hour, 0)}},
		"leaving nodes are replaced": {replicas: 2, limit: -1,
			members: []member{ready("a", time.Hour, 0), {name: "b", leaving: true, launched: true, initialized: true}}, wantCreate: 1},
		"the node limit caps the replicas": {replicas: 5, limit: 3, members: []member{ready("a", time.Hour, 0)},
			wantCreate: 2, wantCapped: true},
		"leaving nodes hold their place under the limit": {replicas: 2, limit: 2,
			members: []member{ready("a", time.Hour, 0), {name: "b", leaving: true, launched: true, initialized: true}}},
		"a limit above the replicas does not cap": {replicas: 1, limit: 4, wantCreate: 1},
		"zero replicas delete every node": {replicas: 0, limit: -1,
			members: []member{ready("a", time.Hour, 0), ready("b", time.Minute, 0)}, wantRemove: []string{"b", "a"}},
		"scale-down order": {replicas: 1, limit: -1, members: []member{
			ready("old-busy", 3*time.Hour, 5),
			ready("old-protected-empty", 3*time.Hour, 0),
			{name: "inflight", created: t0},
			{name: "launched", launched: true, created: t0.Add(-time.Minute)},
			ready("young-busy", time.Hour, 5),
			ready("old-light", 3*time.Hour, 1),
			{name: "drifted", launched: true, initialized: true, drifted: true, pods: 9, created: t0.Add(-time.Hour)},
			ready("old-empty", 3*time.Hour, 0),
		}, wantRemove: []string{"inflight", "launched", "drifted", "old-empty", "old-light", "young-busy", "old-busy"}},
		"surplus leaves the limit alone": {replicas: 1, limit: 1,
			members: []member{ready("a", time.Hour, 0), ready("b", time.Minute, 0)}, wantRemove: []string{"b"}},
	} {
		t.Run(name, func(t *testing.T) {
			members := tc.members
			for i := range members {
				if members[i].name == "old-protected-empty" {
					members[i].protected = true
				}
			}
			d := decide(tc.replicas, tc.limit, members)
			if d.create != tc.wantCreate {
				t.Errorf("create = %d, want %d", d.create, tc.wantCreate)
			}
			if diff := cmp.Diff(tc.wantRemove, d.remove); diff != "" {
				t.Errorf("remove (-want,+got):\n%s", diff)
			}
			if d.capped != tc.wantCapped {
				t.Errorf("capped = %v, want %v", d.capped, tc.wantCapped)
			}
		})
	}
}

func TestCondition(t *testing.T) {
	for name, tc := range map[string]struct {
		replicas, limit int64
		d               decision
		wantServed      bool
		wantReason      string
	}{
		"served":              {replicas: 2, limit: -1, d: decision{active: 2, initialized: 2, target: 2}, wantServed: true, wantReason: ReasonReplicasServed},
		"launching":           {replicas: 2, limit: -1, d: decision{active: 0, target: 2, create: 2}, wantReason: ReasonScalingUp},
		"initializing":        {replicas: 2, limit: -1, d: decision{active: 2, initialized: 1, target: 2}, wantReason: ReasonScalingUp},
		"deleting":            {replicas: 1, limit: -1, d: decision{active: 2, initialized: 2, target: 1, remove: []string{"a"}}, wantReason: ReasonScalingDown},
		"capped at the limit": {replicas: 5, limit: 2, d: decision{active: 2, initialized: 2, target: 2, capped: true}, wantReason: ReasonNodeLimitReached},
		"waiting under the limit": {replicas: 2, limit: 2, d: decision{active: 1, initialized: 1, target: 2},
			wantReason: ReasonScalingUp},
	} {
		t.Run(name, func(t *testing.T) {
			served, reason, message := tc.d.condition(tc.replicas, tc.limit)
			if served != tc.wantServed || reason != tc.wantReason || message == "" {
				t.Errorf("condition = %v/%s (%q), want %v/%s with a message", served, reason, message, tc.wantServed, tc.wantReason)
			}
		})
	}
}
