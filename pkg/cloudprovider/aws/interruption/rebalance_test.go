package interruption_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// nodePool creates the test pool with the given metadata annotations.
func nodePool(t *testing.T, annotations map[string]string) {
	t.Helper()
	np := test.MakeNodePool(pool).Obj()
	np.Annotations = annotations
	h.Create(t, np)
}

var optedIn = map[string]string{karpv1.SpotRebalanceAnnotationKey: karpv1.SpotRebalanceReplace}

// rebalance sends a rebalance recommendation for each named instance (in
// one batch) and runs a pass, which must succeed.
func (w *world) rebalance(t *testing.T, names ...string) {
	t.Helper()
	bodies := make([]string, 0, len(names))
	for _, name := range names {
		bodies = append(bodies, interruption.EventBody(interruption.KindRebalanceRecommendation, instanceID(name), eventTimeNow(), "us-west-2"))
	}
	w.send(t, bodies...)
	if _, err := w.reconcile(t); err != nil {
		t.Fatal(err)
	}
}

func rebalanceCondition(t *testing.T, name string) *metav1.Condition {
	t.Helper()
	return h.NodeClaim(t, name).StatusConditions().Get(karpv1.ConditionTypeRebalanceRecommended)
}

// A recommendation for a spot node of an opted-in pool marks its spot
// offering unavailable and sets RebalanceRecommended, and nothing else: the
// NodeClaim is not deleted (the disruption controller replaces it). The
// same recommendation again changes nothing: no new transition, no new
// mark, no deletion.
func TestRebalanceRecommendationMarksOptedInSpotNodeClaim(t *testing.T) {
	w := setup(t, true)
	nodePool(t, optedIn)
	launched(t, "risky", karpv1.CapacityTypeSpot)
	launched(t, "calm", karpv1.CapacityTypeSpot)
	before := readCounters()

	w.rebalance(t, "risky")
	cond := rebalanceCondition(t, "risky")
	if cond == nil || cond.Status != metav1.ConditionTrue || !cond.LastTransitionTime.Time.Equal(h.Clock.Now().Truncate(time.Second)) {
		t.Fatalf("RebalanceRecommended = %+v, want True since now", cond)
	}
	if h.Deleting(t, "risky") {
		t.Fatal("the NodeClaim was deleted; it must keep serving until its replacement is ready")
	}
	if c := rebalanceCondition(t, "calm"); c != nil {
		t.Errorf("a NodeClaim without a message was marked: %+v", c)
	}
	if !w.offerings.IsUnavailable(instanceType, zone, karpv1.CapacityTypeSpot) {
		t.Error("the recommended spot offering is still available")
	}
	if w.offerings.IsUnavailable(instanceType, zone, karpv1.CapacityTypeOnDemand) {
		t.Error("the on-demand offering was marked unavailable")
	}
	for _, kind := range []string{"NodeClaim", "Node"} {
		h.WaitForEvent(t, kind, "risky", interruption.ReasonSpotRebalanceRecommendation)
	}
	want := counters{
		received: map[interruption.Kind]float64{interruption.KindRebalanceRecommendation: 1},
		deleted:  1, disrupted: map[interruption.Kind]float64{}, queued: 1, queuedSeconds: 5,
	}
	if diff := cmp.Diff(want, readCounters().since(before), cmp.AllowUnexported(counters{})); diff != "" {
		t.Errorf("metrics (-want,+got):\n%s", diff)
	}

	// Again, later (EC2 may send it again): nothing changes.
	h.Clock.Step(time.Minute)
	marked, version, marks := h.NodeClaim(t, "risky"), w.offerings.Version(), w.offerings.SeqNum(instanceType)
	w.rebalance(t, "risky")
	again := h.NodeClaim(t, "risky")
	if again.ResourceVersion != marked.ResourceVersion {
		t.Errorf("the NodeClaim was written again: conditions %+v", again.Status.Conditions)
	}
	if v, s := w.offerings.Version(), w.offerings.SeqNum(instanceType); v != version || s != marks {
		t.Errorf("the offering was marked again (version %d -> %d)", version, v)
	}
	if h.Deleting(t, "risky") {
		t.Error("a repeated recommendation deleted the NodeClaim")
	}
	if got := w.sqs.Messages(queueName); got != (fake.QueueCounts{Deleted: 2}) {
		t.Errorf("queue = %+v, want both messages deleted", got)
	}
}

// Two copies of the recommendation in one batch (handled concurrently)
// mark the NodeClaim once and fail nothing.
func TestRebalanceRecommendationTwiceInABatch(t *testing.T) {
	w := setup(t, true)
	nodePool(t, optedIn)
	launched(t, "risky", karpv1.CapacityTypeSpot)
	w.rebalance(t, "risky", "risky")
	if c := rebalanceCondition(t, "risky"); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("RebalanceRecommended = %+v, want True", c)
	}
	if got := w.sqs.Messages(queueName); got != (fake.QueueCounts{Deleted: 2}) {
		t.Errorf("queue = %+v, want both messages deleted", got)
	}
}

// Without the opt-in (no annotation, another value, no NodePool), for an
// on-demand node, or for a NodeClaim already being disrupted or deleted, a
// recommendation publishes its event and changes nothing else.
func TestRebalanceRecommendationEventOnly(t *testing.T) {
	for name, tc := range map[string]struct {
		annotations map[string]string
		noPool      bool
		capacity    string
		disrupting  bool
		deleting    bool
	}{
		"no annotation":           {capacity: karpv1.CapacityTypeSpot},
		"another value":           {annotations: map[string]string{karpv1.SpotRebalanceAnnotationKey: "event"}, capacity: karpv1.CapacityTypeSpot},
		"no nodepool":             {noPool: true, capacity: karpv1.CapacityTypeSpot},
		"on-demand":               {annotations: optedIn, capacity: karpv1.CapacityTypeOnDemand},
		"already being disrupted": {annotations: optedIn, capacity: karpv1.CapacityTypeSpot, disrupting: true},
		"already deleting":        {annotations: optedIn, capacity: karpv1.CapacityTypeSpot, deleting: true},
	} {
		t.Run(name, func(t *testing.T) {
			w := setup(t, true)
			if !tc.noPool {
				nodePool(t, tc.annotations)
			}
			node := strings.ReplaceAll(name, " ", "-") // events of earlier subtests stay
			launched(t, node, tc.capacity)
			if tc.disrupting {
				nc := h.NodeClaim(t, node)
				nc.StatusConditions().SetTrueWithReason(karpv1.ConditionTypeDisruptionReason, string(karpv1.DisruptionReasonDrifted), "")
				h.UpdateStatus(t, nc)
			}
			if tc.deleting {
				if err := h.Env.Client.Delete(t.Context(), h.NodeClaim(t, node)); err != nil {
					t.Fatal(err)
				}
			}
			stored, version := h.NodeClaim(t, node), w.offerings.Version()
			w.rebalance(t, node)
			got := h.NodeClaim(t, node)
			if c := got.StatusConditions().Get(karpv1.ConditionTypeRebalanceRecommended); c != nil {
				t.Errorf("RebalanceRecommended set: %+v", c)
			}
			if got.ResourceVersion != stored.ResourceVersion {
				t.Errorf("the NodeClaim was written: %+v", got.Status.Conditions)
			}
			if w.offerings.Version() != version {
				t.Error("an offering was marked unavailable")
			}
			if !tc.deleting && h.Deleting(t, node) {
				t.Error("the NodeClaim was deleted")
			}
			h.WaitForEvent(t, "NodeClaim", node, interruption.ReasonSpotRebalanceRecommendation)
			if got := w.sqs.Messages(queueName); got != (fake.QueueCounts{Deleted: 1}) {
				t.Errorf("queue = %+v, want the message deleted", got)
			}
		})
	}
}
