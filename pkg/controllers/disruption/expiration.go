package disruption

import (
	"context"
	"sort"
	"time"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/interruption"
)

// DisruptionReasonExpired is the reason of the commands that replace an
// expiring node before its expireAfter deadline (the reason upstream's
// forceful expiry reports in its metrics, "expired").
const DisruptionReasonExpired karpv1.DisruptionReason = "Expired"

// Lead-time bounds of the replacement ahead of expiry (expiryLead).
const (
	// minExpiryLead is the least lead: a pool whose nodes initialize in a
	// second still gets the polls and the drain some room.
	minExpiryLead = 30 * time.Second
	// expiryLeadShare caps the lead at this share of expireAfter, so a
	// short expireAfter does not replace each node as soon as it starts.
	expiryLeadShare = 2
)

// Expiration launches the replacement capacity an expiring node's pods
// need ahead of the node's expiry (creation + expireAfter) and drains the
// node once the replacements are initialized, so no pod evicted for
// expiry waits for a node to launch. Upstream deletes an expired node at
// once and provisions for its pods afterwards; karp does that only when
// the early replacement was not possible (a do-not-disrupt pod, a PDB, a
// replacement that did not initialize): the nodeclaim expiration
// controller still deletes the NodeClaim at the deadline, whatever is in
// flight. Like upstream's expiry, the early replacement is not limited by
// disruption budgets (PDBs and rollout budgets still hold the drain).
type Expiration struct {
	// pollPeriod is the disruption loop's idle period, added to the lead;
	// queueTimeout, how long a replacement may take to initialize, caps it.
	pollPeriod, queueTimeout time.Duration
	// leads caches each NodePool's lead for the pass it was computed in.
	leads   map[string]time.Duration
	leadsAt *world
}

// Name is "expiration".
func (e *Expiration) Name() string { return "expiration" }

// ConsolidationType is "": expiry is not consolidation.
func (e *Expiration) ConsolidationType() string { return "" }

// Reason is Expired.
func (e *Expiration) Reason() karpv1.DisruptionReason { return DisruptionReasonExpired }

// NeedsValidation is false: an expiring node stays expiring.
func (e *Expiration) NeedsValidation() bool { return false }

// IgnoresBudgets is true: expiry is a deadline, not a choice.
func (e *Expiration) IgnoresBudgets() bool { return true }

// ShouldDisrupt keeps candidates whose expiry is within their NodePool's
// lead time.
func (e *Expiration) ShouldDisrupt(_ context.Context, w *world, c *Candidate) (bool, blocker) {
	at, ok := expiresAt(c)
	if !ok {
		return false, blocker{}
	}
	return !w.now.Before(at.Add(-e.lead(w, c))), blocker{}
}

// ComputeCommand returns the replacement of the candidate expiring first
// whose pods all fit elsewhere or on new capacity.
func (e *Expiration) ComputeCommand(ctx context.Context, w *world, sim Simulator, _ Budgets, candidates ...*Candidate) (Command, error) {
	cands := append([]*Candidate(nil), candidates...)
	sort.SliceStable(cands, func(i, j int) bool {
		ai, _ := expiresAt(cands[i])
		aj, _ := expiresAt(cands[j])
		return ai.Before(aj)
	})
	return firstReplaceable(ctx, w, sim, e, e.Reason(), cands, func(c *Candidate) string {
		at, _ := expiresAt(c)
		return "expires at " + at.UTC().Format(time.RFC3339) + ", but its replacement cannot be launched ahead: "
	})
}

// expiresAt is when the candidate's NodeClaim expires, if it does.
func expiresAt(c *Candidate) (time.Time, bool) {
	nc := c.NodeClaim()
	d := nc.Spec.ExpireAfter.Duration
	if d == nil || *d <= 0 {
		return time.Time{}, false
	}
	return nc.CreationTimestamp.Add(*d), true
}

// lead is how long before expiry the candidate's replacement is launched
// (interruption.LaunchLead): twice the longest launch-to-initialized time
// observed among its NodePool's nodes (the candidate's own included), plus
// a poll period, at least minExpiryLead, at most the replacement timeout
// (a node migrated or long stuck initializing says nothing of launch
// times) and half its expireAfter.
func (e *Expiration) lead(w *world, c *Candidate) time.Duration {
	if e.leadsAt != w {
		e.leads, e.leadsAt = observedLaunchTimes(w), w
	}
	lead := interruption.LaunchLead(e.leads[c.NodePool.Name], e.pollPeriod, minExpiryLead, e.queueTimeout)
	if d := c.NodeClaim().Spec.ExpireAfter.Duration; d != nil {
		lead = min(lead, *d/expiryLeadShare)
	}
	return lead
}

// observedLaunchTimes is, per NodePool, the longest LaunchTime of its
// current NodeClaims (interruption.ObservedLaunchTime from the cluster
// state).
func observedLaunchTimes(w *world) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, sn := range w.stateNodes {
		if sn.NodeClaim == nil || !sn.Managed() {
			continue
		}
		if launch, ok := interruption.LaunchTime(sn.NodeClaim); ok {
			pool := sn.NodePool()
			out[pool] = max(out[pool], launch)
		}
	}
	return out
}
