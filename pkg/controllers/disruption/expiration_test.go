package disruption_test

import (
	"testing"
	"time"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// An expiring node's replacement is launched ahead of its expiry, within
// the lead (here the 30 s floor: the node's own launch looks instant), and
// regardless of the pool's budgets (expiry is forceful); the node is
// deleted (drained) only once the replacement is initialized. Earlier than
// the lead nothing happens, and with --replace-first=false nothing
// happens before expiry either (the expiration controller deletes the
// node at the deadline, as upstream).
func TestExpiringNodeIsReplacedBeforeItExpires(t *testing.T) {
	for name, on := range map[string]bool{"on": true, "off": false} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			if !on {
				h.opts.ReplaceFirst = false
				h.newController()
			}
			h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "0"}).Obj())
			nc := h.runningNode("expiring-"+name, nodeOpts{it: smallType, expireAfter: time.Hour}, pod("p1", "1500m"))
			expiry := nc.CreationTimestamp.Add(time.Hour)

			h.clock.SetTime(expiry.Add(-5 * time.Minute))
			h.pass()
			if got := h.replacements(nc.Name); len(got) != 0 {
				t.Fatalf("replacement launched 5m before expiry, before the lead: %v", got[0].Name)
			}

			h.clock.SetTime(expiry.Add(-20 * time.Second))
			h.pass()
			repl := h.replacements(nc.Name)
			if !on {
				if len(repl) != 0 {
					t.Fatalf("replacement %s launched with --replace-first=false", repl[0].Name)
				}
				return
			}
			if len(repl) != 1 {
				t.Fatalf("%d replacements 20s before expiry, want 1 (DisruptionBlocked = %+v)", len(repl), h.blocked(nc.Name))
			}
			if c := h.nodeClaim(nc.Name).StatusConditions().Get(karpv1.ConditionTypeDisruptionReason); c == nil || c.Reason != "Expired" {
				t.Errorf("DisruptionReason condition %+v, want reason Expired", c)
			}
			if !h.tainted(nc.Name) {
				t.Errorf("expiring node not tainted %s while its replacement launches", karpv1.DisruptedTaintKey)
			}
			h.pass()
			if h.gone(nc.Name) {
				t.Fatal("expiring node deleted before its replacement initialized")
			}
			if got := h.replacements(nc.Name); len(got) != 1 {
				t.Fatalf("%d replacements after another pass, want still 1", len(got))
			}
			h.initialize(&repl[0], smallType)
			h.pass()
			if !h.gone(nc.Name) {
				t.Fatal("expiring node not deleted once its replacement initialized")
			}
		})
	}
}

// A NodeClaim an interruption or repair marked with a replace-by deadline
// gets its replacement at once, whatever the budgets, and is deleted only
// once the replacement is initialized, with the signal's reason; with
// --replace-first=false the mark is left to the deadline.
func TestReplaceByMarkedNodeIsReplacedFirst(t *testing.T) {
	for name, tc := range map[string]struct {
		signal string
		reason string
		on     bool
	}{
		"interrupted":      {signal: "interrupted", reason: "Interrupted", on: true},
		"spot-interrupted": {signal: "spot_interrupted", reason: "Interrupted", on: true},
		"unhealthy":        {signal: "unhealthy", reason: "Unhealthy", on: true},
		"off":              {signal: "interrupted"},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			if !tc.on {
				h.opts.ReplaceFirst = false
				h.newController()
			}
			h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "0"}).Obj())
			by := h.clock.Now().Add(time.Minute).UTC().Format(time.RFC3339)
			nc := h.runningNode("marked-"+name, nodeOpts{it: smallType, annotations: map[string]string{
				karpv1.ReplaceByAnnotationKey: by, karpv1.ReplaceReasonAnnotationKey: tc.signal}}, pod("p1", "1500m"))
			h.pass()
			repl := h.replacements(nc.Name)
			if !tc.on {
				if len(repl) != 0 {
					t.Fatalf("replacement %s launched with --replace-first=false", repl[0].Name)
				}
				return
			}
			if len(repl) != 1 {
				t.Fatalf("%d replacements, want 1 (DisruptionBlocked = %+v)", len(repl), h.blocked(nc.Name))
			}
			if c := h.nodeClaim(nc.Name).StatusConditions().Get(karpv1.ConditionTypeDisruptionReason); c == nil || c.Reason != tc.reason {
				t.Errorf("DisruptionReason condition %+v, want reason %s", c, tc.reason)
			}
			h.pass()
			if h.gone(nc.Name) {
				t.Fatal("deleted before its replacement initialized")
			}
			h.initialize(&repl[0], smallType)
			h.pass()
			if !h.gone(nc.Name) {
				t.Fatal("not deleted once its replacement initialized")
			}
		})
	}
}
