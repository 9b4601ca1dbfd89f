package expiration_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/capacityreservation/expiration"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

var instances atomic.Int64

var ec2NodeClass = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: awsv1.Kind, Name: "default"}

// inReservation creates a NodeClaim of an EC2NodeClass in the reservation
// (held by the termination finalizer once deleted) and its registered
// Node.
func inReservation(t *testing.T, name, reservationID string) *karpv1.NodeClaim {
	t.Helper()
	return inReservationOf(t, name, reservationID, ec2NodeClass)
}

func inReservationOf(t *testing.T, name, reservationID string, class *karpv1.NodeClassReference) *karpv1.NodeClaim {
	t.Helper()
	providerID := fmt.Sprintf("aws:///us-west-2a/i-%017x", instances.Add(1))
	nodeClaim := test.MakeNodeClaim(name).NodePool("default").NodeClassRef(class).
		Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeReserved).
		Label(awsv1.LabelCapacityReservationID, reservationID).
		Finalizers(karpv1.TerminationFinalizer).Obj()
	h.Create(t, nodeClaim)
	nodeClaim.Status.ProviderID = providerID
	h.UpdateStatus(t, nodeClaim)
	h.Create(t, test.MakeNode("node-"+name).Label(karpv1.NodeRegisteredLabelKey, "true").ProviderID(providerID).Obj())
	return nodeClaim
}

func TestDrainsCapacityBlocksBeforeTheyEnd(t *testing.T) {
	t.Cleanup(func() { h.Reset(t) })
	start := h.Clock.Now()
	end := start.Add(2 * time.Hour)
	e := fake.NewEC2()
	e.SetLaunchClock(h.Clock)
	odcr := fake.NewCapacityReservation("cr-odcr", "m5.large", "us-west-2a", 1, nil)
	odcr.EndDate = aws.Time(start.Add(39 * time.Minute))
	e.AddCapacityReservations(
		fake.NewCapacityBlock("cr-block", "p5.48xlarge", "us-west-2a", 2, end),
		fake.NewCapacityBlock("cr-block-later", "p5.48xlarge", "us-west-2a", 1, end.Add(time.Hour)),
		odcr,
	)
	c := expiration.NewController(h.Client, capacityreservation.NewProvider(e, h.Clock), h.Recorder, h.Clock)
	reconcileAt := func(at time.Time) reconcile.Result {
		t.Helper()
		h.Clock.SetTime(at)
		h.Synced(t)
		res, err := c.Reconcile(t.Context(), reconcile.Request{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first, second := inReservation(t, "block-a", "cr-block"), inReservation(t, "block-b", "cr-block")
	later, inODCR := inReservation(t, "block-later", "cr-block-later"), inReservation(t, "odcr", "cr-odcr")
	deleting := func() []string {
		var out []string
		for _, nc := range []*karpv1.NodeClaim{first, second, later, inODCR} {
			if h.Get(t, nc) && !nc.DeletionTimestamp.IsZero() {
				out = append(out, nc.Name)
			}
		}
		return out
	}
	counted := func() float64 {
		return testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues(expiration.Reason, "default", karpv1.CapacityTypeReserved, "", metrics.TerminationModeForceful))
	}
	before := counted()

	// 1. Hours before the end nothing happens; the next look is in a minute.
	if res := reconcileAt(start); res.RequeueAfter != expiration.Period {
		t.Errorf("requeue after %v, want %v", res.RequeueAfter, expiration.Period)
	}
	// 2. 20 seconds before the block turns expiring, the next look is then.
	expiringAt := end.Add(-capacityreservation.ExpiringWindow)
	if res := reconcileAt(expiringAt.Add(-20 * time.Second)); res.RequeueAfter != 20*time.Second {
		t.Errorf("requeue after %v, want 20s (when the block turns expiring)", res.RequeueAfter)
	}
	if got := deleting(); len(got) != 0 {
		t.Fatalf("%v deleting before the block is expiring, want none", got)
	}
	// 3. 40 minutes before the end, the block's NodeClaims are deleted with
	//    EC2's reclaim time as their termination deadline; the ODCR's
	//    (whose end date passed, but which is no capacity block) and the
	//    later block's are not.
	reconcileAt(expiringAt)
	if got, want := strings.Join(deleting(), ","), "block-a,block-b"; got != want {
		t.Errorf("deleting %s, want %s", got, want)
	}
	wantDeadline := end.Add(-30 * time.Minute).UTC().Format(time.RFC3339)
	for _, nc := range []*karpv1.NodeClaim{first, second} {
		if got := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; got != wantDeadline {
			t.Errorf("%s termination deadline %q, want %q (EC2 starts reclaiming)", nc.Name, got, wantDeadline)
		}
		note := h.EventNote(t, "NodeClaim", nc.Name, expiration.ReasonCapacityBlockExpiring)
		if !strings.Contains(note, "cr-block") || !strings.Contains(note, wantDeadline) {
			t.Errorf("event note %q names neither the block nor the reclaim time", note)
		}
		h.WaitForEvent(t, "Node", "node-"+nc.Name, expiration.ReasonCapacityBlockExpiring)
	}
	if got := counted() - before; got != 2 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=%s} grew by %v, want 2", expiration.Reason, got)
	}
	// 4. Another pass deletes nothing twice.
	reconcileAt(expiringAt.Add(time.Minute))
	if got := counted() - before; got != 2 {
		t.Errorf("a second pass counted %v deletions, want the 2 of the first", got)
	}
	if n := len(h.EventReasons(t, "NodeClaim", first.Name)); n != 1 {
		t.Errorf("%d events on %s, want 1", n, first.Name)
	}
}

// A NodeClaim of another kind of NodeClass labelled with an expiring
// block, and one of a reservation EC2 does not know, are left alone.
func TestIgnoresOthers(t *testing.T) {
	t.Cleanup(func() { h.Reset(t) })
	e := fake.NewEC2()
	e.SetLaunchClock(h.Clock)
	e.AddCapacityReservations(fake.NewCapacityBlock("cr-block", "p5.48xlarge", "us-west-2a", 1, h.Clock.Now().Add(10*time.Minute)))
	c := expiration.NewController(h.Client, capacityreservation.NewProvider(e, h.Clock), h.Recorder, h.Clock)
	gone := inReservation(t, "gone", "cr-gone")
	kwok := inReservationOf(t, "kwok", "cr-block", &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"})
	h.Synced(t)
	res, err := c.Reconcile(t.Context(), reconcile.Request{})
	if err != nil || res.RequeueAfter != expiration.Period {
		t.Fatalf("reconcile: %v, %v", res, err)
	}
	for _, nc := range []*karpv1.NodeClaim{gone, kwok} {
		if h.Get(t, nc); !nc.DeletionTimestamp.IsZero() {
			t.Errorf("%s was deleted", nc.Name)
		}
	}
}
