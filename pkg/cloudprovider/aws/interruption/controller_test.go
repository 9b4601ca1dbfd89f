package interruption_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

func TestSpotInterruptionWarning(t *testing.T) {
	w := setup(t, true)
	launched(t, "interrupted", karpv1.CapacityTypeSpot)
	launched(t, "calm", karpv1.CapacityTypeSpot)
	warnedAt := eventTimeNow()
	before := readCounters()

	w.send(t, interruption.EventBody(interruption.KindSpotInterrupted, instanceID("interrupted"), warnedAt, "us-west-2"))
	if res, err := w.reconcile(t); err != nil || res.RequeueAfter <= 0 {
		t.Fatalf("reconcile = %+v, %v; want a requeue and no error", res, err)
	}

	// The NodeClaim is deleted with the reclaim time as its deadline; the
	// other is untouched.
	got := h.NodeClaim(t, "interrupted")
	if got.DeletionTimestamp.IsZero() {
		t.Fatal("interrupted NodeClaim not deleted")
	}
	wantDeadline := warnedAt.Add(interruption.SpotNoticePeriod).UTC().Format(time.RFC3339)
	if ts := got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ts != wantDeadline {
		t.Errorf("termination deadline = %q, want the reclaim time %q", ts, wantDeadline)
	}
	if h.Deleting(t, "calm") {
		t.Error("a NodeClaim without a message was deleted")
	}
	// The spot offering is avoided for a while, not the on-demand one.
	if !w.offerings.IsUnavailable(instanceType, zone, karpv1.CapacityTypeSpot) {
		t.Error("interrupted spot offering still available")
	}
	if w.offerings.IsUnavailable(instanceType, zone, karpv1.CapacityTypeOnDemand) {
		t.Error("on-demand offering marked unavailable")
	}
	h.Clock.Step(cache.UnavailableOfferingsTTL + time.Second)
	if w.offerings.IsUnavailable(instanceType, zone, karpv1.CapacityTypeSpot) {
		t.Error("offering still unavailable after the TTL")
	}
	// Events on both objects, the message deleted, metrics counted.
	for _, kind := range []string{"NodeClaim", "Node"} {
		h.WaitForEvent(t, kind, "interrupted", interruption.ReasonSpotInterrupted)
		h.WaitForEvent(t, kind, "interrupted", interruption.ReasonTerminatingOnInterruption)
	}
	if got := w.sqs.Messages(queueName); got != (fake.QueueCounts{Deleted: 1}) {
		t.Errorf("queue = %+v, want the message deleted", got)
	}
	want := counters{
		received:  map[interruption.Kind]float64{interruption.KindSpotInterrupted: 1},
		deleted:   1,
		disrupted: map[interruption.Kind]float64{interruption.KindSpotInterrupted: 1},
		// Handled 5 s after the warning (the fake clock stands still).
		queued: 1, queuedSeconds: 5,
	}
	if diff := cmp.Diff(want, readCounters().since(before), cmp.AllowUnexported(counters{})); diff != "" {
		t.Errorf("metrics (-want,+got):\n%s", diff)
	}
}

func TestMessageKinds(t *testing.T) {
	for kind, tc := range map[interruption.Kind]struct {
		wantDeleted bool
		wantReason  string
	}{
		interruption.KindRebalanceRecommendation:        {false, interruption.ReasonSpotRebalanceRecommendation},
		interruption.KindScheduledChange:                {true, interruption.ReasonInstanceUnhealthy},
		interruption.KindInstanceStopped:                {true, interruption.ReasonInstanceStopping},
		interruption.KindInstanceTerminated:             {true, interruption.ReasonInstanceTerminating},
		interruption.KindCapacityReservationInterrupted: {true, interruption.ReasonCapacityReservationInstanceInterrupted},
	} {
		t.Run(string(kind), func(t *testing.T) {
			w := setup(t, true)
			name := strings.ReplaceAll(string(kind), "_", "-") // events of earlier subtests stay
			launched(t, name, karpv1.CapacityTypeOnDemand)
			before := readCounters()
			w.send(t, interruption.EventBody(kind, instanceID(name), eventTimeNow(), "us-west-2"))
			if _, err := w.reconcile(t); err != nil {
				t.Fatal(err)
			}
			got := h.NodeClaim(t, name)
			if deleted := !got.DeletionTimestamp.IsZero(); deleted != tc.wantDeleted {
				t.Errorf("NodeClaim deleted = %v, want %v", deleted, tc.wantDeleted)
			}
			if _, ok := got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
				t.Error("a termination deadline was set for a message without a reclaim time")
			}
			h.WaitForEvent(t, "NodeClaim", name, tc.wantReason)
			h.WaitForEvent(t, "Node", name, tc.wantReason)
			if tc.wantDeleted {
				h.WaitForEvent(t, "NodeClaim", name, interruption.ReasonTerminatingOnInterruption)
				h.WaitForEvent(t, "Node", name, interruption.ReasonTerminatingOnInterruption)
			}
			if w.offerings.IsUnavailable(instanceType, zone, karpv1.CapacityTypeSpot) || w.offerings.IsUnavailable(instanceType, zone, karpv1.CapacityTypeOnDemand) {
				t.Error("an offering was marked unavailable for a message that is not a spot interruption")
			}
			if got := w.sqs.Messages(queueName); got != (fake.QueueCounts{Deleted: 1}) {
				t.Errorf("queue = %+v, want the message deleted", got)
			}
			delta := readCounters().since(before)
			if delta.received[kind] != 1 || delta.deleted != 1 {
				t.Errorf("metrics grew by %+v, want one %s received and one deleted", delta, kind)
			}
			wantDisrupted := map[interruption.Kind]float64{}
			if tc.wantDeleted {
				wantDisrupted[kind] = 1
			}
			if diff := cmp.Diff(wantDisrupted, delta.disrupted); diff != "" {
				t.Errorf("nodeclaims disrupted (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestMalformedForeignAndUnknownInstanceMessagesAreDeleted(t *testing.T) {
	w := setup(t, true)
	launched(t, "n", karpv1.CapacityTypeSpot)
	before := readCounters()
	w.send(t,
		"not json at all",
		`{"version":"0","id":"x","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{}}`,
		interruption.EventBody(interruption.KindNoOp, instanceID("n"), eventTimeNow(), "us-west-2"),
		interruption.EventBody(interruption.KindSpotInterrupted, "i-0notinthiscluster", eventTimeNow(), "us-west-2"),
	)
	// An event without a time counts from when it was sent, 7 s ago.
	w.sqsClock.SetTime(h.Clock.Now().Add(-7 * time.Second))
	w.send(t, `{"version":"0","id":"y","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","detail":{"instance-id":"i-0elsewhere"}}`)
	w.sqsClock.SetTime(h.Clock.Now())
	if res, err := w.reconcile(t); err != nil || res.RequeueAfter <= 0 {
		t.Fatalf("reconcile = %+v, %v; want a requeue and no error", res, err)
	}
	if h.Deleting(t, "n") {
		t.Error("NodeClaim deleted by a message about another instance")
	}
	if got := w.sqs.Messages(queueName); got != (fake.QueueCounts{Deleted: 5}) {
		t.Errorf("queue = %+v, want every message deleted", got)
	}
	want := counters{
		received: map[interruption.Kind]float64{
			interruption.KindMalformed: 2, interruption.KindNoOp: 1, interruption.KindSpotInterrupted: 1,
			interruption.KindRebalanceRecommendation: 1,
		},
		deleted:   5,
		disrupted: map[interruption.Kind]float64{},
		// The three that parsed, 5 s, 5 s and 7 s after their events (or
		// sending); malformed bodies are not timed.
		queued: 3, queuedSeconds: 5 + 5 + 7,
	}
	if diff := cmp.Diff(want, readCounters().since(before), cmp.AllowUnexported(counters{})); diff != "" {
		t.Errorf("metrics (-want,+got):\n%s", diff)
	}
}

func TestABatchIsHandledTogether(t *testing.T) {
	w := setup(t, true)
	var bodies []string
	for i := range 10 {
		name := fmt.Sprintf("n%d", i)
		launched(t, name, karpv1.CapacityTypeSpot)
		bodies = append(bodies, interruption.EventBody(interruption.KindSpotInterrupted, instanceID(name), eventTimeNow(), "us-west-2"))
	}
	// A second message about one of them, in the same batch.
	bodies = append(bodies[:9], interruption.EventBody(interruption.KindInstanceTerminated, instanceID("n0"), eventTimeNow(), "us-west-2"))
	w.send(t, bodies...)
	if _, err := w.reconcile(t); err != nil {
		t.Fatal(err)
	}
	for i := range 9 {
		if name := fmt.Sprintf("n%d", i); !h.Deleting(t, name) {
			t.Errorf("%s not deleted", name)
		}
	}
	if h.Deleting(t, "n9") {
		t.Error("n9 had no message but was deleted")
	}
	if got := w.sqs.Messages(queueName); got != (fake.QueueCounts{Deleted: 10}) {
		t.Errorf("queue = %+v, want the whole batch deleted", got)
	}
}

func TestQueueMissingThenCreated(t *testing.T) {
	w := setup(t, false)
	launched(t, "n", karpv1.CapacityTypeSpot)
	for range 2 {
		_, err := w.reconcile(t)
		if !errors.As(err, new(*sqstypes.QueueDoesNotExist)) || !strings.Contains(err.Error(), queueName) {
			t.Fatalf("err = %v, want QueueDoesNotExist naming the queue", err)
		}
	}
	if got := w.sqs.Calls("GetQueueUrl"); got != 2 {
		t.Errorf("GetQueueUrl called %d times, want once per pass while missing", got)
	}

	w.createQueue(t)
	w.send(t, interruption.EventBody(interruption.KindInstanceStopped, instanceID("n"), eventTimeNow(), "us-west-2"))
	if _, err := w.reconcile(t); err != nil {
		t.Fatal(err)
	}
	if !h.Deleting(t, "n") {
		t.Error("message not handled once the queue exists")
	}

	// The URL is kept; a queue deleted later is looked up again.
	w.send(t, interruption.EventBody(interruption.KindRebalanceRecommendation, instanceID("n"), eventTimeNow(), "us-west-2"))
	if _, err := w.reconcile(t); err != nil {
		t.Fatal(err)
	}
	if got := w.sqs.Calls("GetQueueUrl"); got != 3 {
		t.Errorf("GetQueueUrl called %d times, want the URL reused", got)
	}
	w.sqs.DeleteQueue(queueName)
	if _, err := w.reconcile(t); !errors.As(err, new(*sqstypes.QueueDoesNotExist)) {
		t.Fatalf("err = %v, want QueueDoesNotExist", err)
	}
	w.createQueue(t)
	if res, err := w.reconcileEmpty(t); err != nil || res.RequeueAfter <= 0 {
		t.Fatalf("after the queue came back: %+v, %v", res, err)
	}
	if got := w.sqs.Calls("GetQueueUrl"); got != 4 {
		t.Errorf("GetQueueUrl called %d times, want a new lookup after the queue went missing", got)
	}
}

func TestFailuresLeaveMessagesForLater(t *testing.T) {
	w := setup(t, true)
	launched(t, "n", karpv1.CapacityTypeSpot)
	w.send(t, interruption.EventBody(interruption.KindSpotInterrupted, instanceID("n"), eventTimeNow(), "us-west-2"))

	// Throttled receive: an error, nothing handled, nothing lost.
	w.sqs.FailNext("ReceiveMessage", 1, fake.SQSThrottling())
	if _, err := w.reconcile(t); err == nil {
		t.Fatal("a throttled receive returned no error")
	}
	if h.Deleting(t, "n") {
		t.Fatal("handled without receiving")
	}
	if got := w.sqs.Messages(queueName); got != (fake.QueueCounts{Visible: 1}) {
		t.Errorf("queue = %+v, want the message still there", got)
	}

	// A failed delete: the NodeClaim is handled, the message comes back
	// after its visibility timeout and is handled (a no-op now) and deleted.
	w.sqs.FailNext("DeleteMessage", 1, fake.SQSThrottling())
	if _, err := w.reconcile(t); err == nil {
		t.Fatal("a failed delete returned no error")
	}
	if !h.Deleting(t, "n") {
		t.Error("NodeClaim not deleted")
	}
	if got := w.sqs.Messages(queueName); got != (fake.QueueCounts{InFlight: 1}) {
		t.Errorf("queue = %+v, want the message in flight", got)
	}
	w.sqsClock.Step(20 * time.Second)
	if _, err := w.reconcile(t); err != nil {
		t.Fatal(err)
	}
	if got := w.sqs.Messages(queueName); got != (fake.QueueCounts{Deleted: 1}) {
		t.Errorf("queue = %+v, want the message deleted on its second receive", got)
	}
}

func TestCapacityReservationInterruptionEmptiesTheReservation(t *testing.T) {
	w := setup(t, true)
	ec2 := fake.NewEC2()
	ec2.AddCapacityReservations(fake.NewCapacityReservation("cr-0abc", instanceType, zone, 4, nil))
	reservations := capacityreservation.NewProvider(ec2, h.Clock)
	nodeClass := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{CapacityReservationSelectorTerms: []awsv1.CapacityReservationSelectorTerm{{ID: "cr-0abc"}}}}
	if _, err := reservations.List(t.Context(), nodeClass); err != nil {
		t.Fatal(err)
	}
	if n, ok := reservations.AvailableInstanceCount("cr-0abc"); !ok || n != 4 {
		t.Fatalf("reservation has %d (%v) instances available before the warning, want 4", n, ok)
	}
	c := interruption.NewController(h.Client, w.sqs, queueName, w.offerings, reservations, h.Clock, h.Recorder)
	launched(t, "reserved", karpv1.CapacityTypeReserved)
	nc := h.NodeClaim(t, "reserved")
	nc.Labels[awsv1.LabelCapacityReservationID] = "cr-0abc"
	if err := h.Env.Client.Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}

	w.send(t, interruption.EventBody(interruption.KindCapacityReservationInterrupted, instanceID("reserved"), eventTimeNow(), "us-west-2"))
	h.Synced(t)
	if _, err := c.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n, _ := reservations.AvailableInstanceCount("cr-0abc"); n != 0 {
		t.Errorf("reservation has %d instances available after the interruption warning, want 0", n)
	}
	if !h.Deleting(t, "reserved") {
		t.Error("the interrupted NodeClaim was not deleted")
	}
}

func TestSpotWarningBringsADrainingNodeClaimsDeadlineForward(t *testing.T) {
	w := setup(t, true)
	launched(t, "draining", karpv1.CapacityTypeSpot)
	nc := h.NodeClaim(t, "draining")
	nc.Annotations = map[string]string{karpv1.NodeClaimTerminationTimestampAnnotationKey: h.Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	if err := h.Env.Client.Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	if err := h.Env.Client.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	warnedAt := eventTimeNow()
	before := readCounters()
	w.send(t, interruption.EventBody(interruption.KindSpotInterrupted, instanceID("draining"), warnedAt, "us-west-2"))
	if _, err := w.reconcile(t); err != nil {
		t.Fatal(err)
	}
	want := warnedAt.Add(interruption.SpotNoticePeriod).UTC().Format(time.RFC3339)
	if got := h.NodeClaim(t, "draining").Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; got != want {
		t.Errorf("deadline of the draining NodeClaim = %q, want the reclaim time %q", got, want)
	}
	if delta := readCounters().since(before); len(delta.disrupted) != 0 || delta.deleted != 1 {
		t.Errorf("metrics grew by %+v; want the message deleted and no new disruption counted", delta)
	}
}

func TestStoppingMidPollIsNotAnError(t *testing.T) {
	w := setup(t, true)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := w.controller.Reconcile(ctx)
		done <- err
	}()
	for !w.sqsClock.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("a pass stopped mid-poll returned %v", err)
	}
}
