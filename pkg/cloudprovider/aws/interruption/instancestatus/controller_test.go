package instancestatus_test

import (
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption/instancestatus"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// A failed status check replaces the NodeClaim as an interruption message
// does, forcefully (its drain deadline is now), once the check has failed
// for two minutes; healthy instances are left alone.
func TestFailedStatusChecksReplaceTheNodeClaim(t *testing.T) {
	w := setup(t)
	ids := w.launch(t, 4)
	for i, name := range []string{"instance-check", "system-check", "healthy", "recent"} {
		owned(t, name, ids[i])
	}
	w.ec2.FailStatusCheck(ids[0], fake.StatusCheckInstance, ago(3*time.Minute))
	w.ec2.FailStatusCheck(ids[1], fake.StatusCheckSystem, ago(5*time.Minute))
	w.ec2.FailStatusCheck(ids[3], fake.StatusCheckInstance, ago(30*time.Second))
	before := readCounters()

	w.reconcile(t)

	for name, want := range map[string]bool{"instance-check": true, "system-check": true, "healthy": false, "recent": false} {
		if got := h.Deleting(t, name); got != want {
			t.Errorf("NodeClaim %s deleting = %v, want %v", name, got, want)
		}
	}
	now := h.Clock.Now().UTC().Format(time.RFC3339)
	for _, name := range []string{"instance-check", "system-check"} {
		if got := h.NodeClaim(t, name).Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; got != now {
			t.Errorf("NodeClaim %s termination deadline %q, want now (%s)", name, got, now)
		}
		h.WaitForEvent(t, "NodeClaim", name, interruption.ReasonInstanceUnhealthy)
		h.WaitForEvent(t, "NodeClaim", name, interruption.ReasonTerminatingOnInterruption)
		h.WaitForEvent(t, "Node", name, interruption.ReasonInstanceUnhealthy)
	}
	want := counters{
		unhealthy: map[instancestatus.Category]float64{instancestatus.CategoryInstanceStatus: 1, instancestatus.CategorySystemStatus: 1},
		disrupted: map[interruption.Kind]float64{interruption.KindInstanceStatus: 1, interruption.KindSystemStatus: 1},
	}
	if diff := cmp.Diff(want, readCounters().since(before), cmp.AllowUnexported(counters{})); diff != "" {
		t.Errorf("counters (-want,+got):\n%s", diff)
	}

	// Two minutes on, the recent failure is old enough; the instances
	// already counted are not counted again.
	h.Clock.Step(2 * time.Minute)
	before = readCounters()
	w.reconcile(t)
	if !h.Deleting(t, "recent") || h.Deleting(t, "healthy") {
		t.Errorf("recent deleting = %v, healthy deleting = %v; want true, false", h.Deleting(t, "recent"), h.Deleting(t, "healthy"))
	}
	want = counters{
		unhealthy: map[instancestatus.Category]float64{instancestatus.CategoryInstanceStatus: 1},
		disrupted: map[interruption.Kind]float64{interruption.KindInstanceStatus: 1},
	}
	if diff := cmp.Diff(want, readCounters().since(before), cmp.AllowUnexported(counters{})); diff != "" {
		t.Errorf("second poll counters (-want,+got):\n%s", diff)
	}
}

// A scheduled event replaces the NodeClaim gracefully (no deadline), as
// an AWS Health scheduled change from the queue does, however far ahead
// the event is.
func TestScheduledEventReplacesTheNodeClaimGracefully(t *testing.T) {
	w := setup(t)
	ids := w.launch(t, 2)
	owned(t, "retiring", ids[0])
	owned(t, "healthy", ids[1])
	w.ec2.ScheduleEvent(ids[0], ec2types.EventCodeInstanceRetirement, h.Clock.Now().Add(14*24*time.Hour))
	before := readCounters()

	w.reconcile(t)

	if !h.Deleting(t, "retiring") || h.Deleting(t, "healthy") {
		t.Fatalf("retiring deleting = %v, healthy deleting = %v; want true, false", h.Deleting(t, "retiring"), h.Deleting(t, "healthy"))
	}
	if got, ok := h.NodeClaim(t, "retiring").Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		t.Errorf("a scheduled event set the termination deadline %q; want a graceful drain", got)
	}
	h.WaitForEvent(t, "NodeClaim", "retiring", interruption.ReasonInstanceUnhealthy)
	want := counters{
		unhealthy: map[instancestatus.Category]float64{instancestatus.CategoryEventStatus: 1},
		disrupted: map[interruption.Kind]float64{interruption.KindEventStatus: 1},
	}
	if diff := cmp.Diff(want, readCounters().since(before), cmp.AllowUnexported(counters{})); diff != "" {
		t.Errorf("counters (-want,+got):\n%s", diff)
	}
}

// Every page of every query is read; unhealthy instances without a
// NodeClaim (another cluster's, or not karp's) are neither acted on nor
// counted.
func TestEveryPageIsReadAndOtherInstancesAreIgnored(t *testing.T) {
	w := setup(t)
	ids := w.launch(t, 7)
	owned(t, "first", ids[0])
	owned(t, "last", ids[6])
	for _, id := range ids {
		w.ec2.FailStatusCheck(id, fake.StatusCheckInstance, ago(10*time.Minute))
	}
	w.ec2.SetInstanceStatusPageSize(3)
	w.ec2.ResetCalls()
	before := readCounters()

	w.reconcile(t)

	if !h.Deleting(t, "first") || !h.Deleting(t, "last") {
		t.Errorf("first deleting = %v, last deleting = %v; want both (the last is on the third page)", h.Deleting(t, "first"), h.Deleting(t, "last"))
	}
	// The impaired-instance query takes three pages; the system check and
	// event queries one each.
	if got := w.ec2.Calls("DescribeInstanceStatus"); got != 5 {
		t.Errorf("DescribeInstanceStatus calls = %d, want 5", got)
	}
	want := counters{
		unhealthy: map[instancestatus.Category]float64{instancestatus.CategoryInstanceStatus: 2},
		disrupted: map[interruption.Kind]float64{interruption.KindInstanceStatus: 2},
	}
	if diff := cmp.Diff(want, readCounters().since(before), cmp.AllowUnexported(counters{})); diff != "" {
		t.Errorf("counters (-want,+got):\n%s", diff)
	}
}

// A denied call is logged and the poll goes on; another failure backs off.
func TestFailedCalls(t *testing.T) {
	w := setup(t)
	owned(t, "node", w.launch(t, 1)[0])

	w.ec2.FailNext("DescribeInstanceStatus", 1, fake.APIError("UnauthorizedOperation", "You are not authorized to perform this operation."))
	res, err := w.controller.Reconcile(t.Context())
	if err != nil || res != (reconcile.Result{RequeueAfter: instancestatus.Interval}) {
		t.Errorf("denied: %+v, %v; want a poll again in %s and no error", res, err, instancestatus.Interval)
	}
	w.ec2.FailNext("DescribeInstanceStatus", 1, fake.APIError("RequestLimitExceeded", "Request limit exceeded."))
	if _, err := w.controller.Reconcile(t.Context()); err == nil {
		t.Error("throttled: no error, want one (backoff)")
	}
	if h.Deleting(t, "node") {
		t.Error("a failed poll deleted a NodeClaim")
	}
}
