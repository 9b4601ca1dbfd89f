package interruption_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/controllers/interruption"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

func setup(t *testing.T) (*kwok.CloudProvider, *interruption.Controller) {
	t.Helper()
	h.Reset(t)
	cp, err := kwok.New(h.Client, kwok.WithInstanceTypes(fake.DefaultInstanceTypes()), kwok.WithClock(h.Clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Close)
	return cp, interruption.NewController(h.Client, cp, h.Clock, h.Recorder)
}

// spotNode creates a spot NodeClaim and its Node, the Node annotated with
// notice when it is not empty.
func spotNode(t *testing.T, name, notice string) {
	t.Helper()
	providerID := "kwok://" + name
	nc := test.MakeNodeClaim(name).NodePool("p").Finalizers(karpv1.TerminationFinalizer).Labels(map[string]string{
		karpv1.NodePoolLabelKey:        "p",
		corev1.LabelInstanceTypeStable: "default-instance-type",
		corev1.LabelTopologyZone:       "test-zone-1",
		karpv1.CapacityTypeLabelKey:    karpv1.CapacityTypeSpot,
	}).Obj()
	h.Create(t, nc)
	h.Get(t, nc)
	nc.Status.ProviderID = providerID
	h.UpdateStatus(t, nc)
	node := test.MakeNode(name).ProviderID(providerID).Obj()
	if notice != "" {
		node.Annotations = map[string]string{interruption.NoticeAnnotationKey: notice}
	}
	h.Create(t, node)
}

func offeringAvailable(t *testing.T, cp *kwok.CloudProvider, zone, capacityType string) bool {
	t.Helper()
	types, err := cp.GetInstanceTypes(t.Context(), test.MakeNodePool("p").Obj())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if it.Name != "default-instance-type" {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == capacityType {
				return o.Available
			}
		}
	}
	t.Fatalf("no offering %s/%s", zone, capacityType)
	return false
}

func TestNoticeDeletesTheNodeClaimAndMarksTheOfferingUnavailable(t *testing.T) {
	cp, c := setup(t)
	reclaimAt := h.Clock.Now().Add(interruption.NoticePeriod).UTC().Format(time.RFC3339)
	spotNode(t, "interrupted", reclaimAt)
	spotNode(t, "calm", "")

	for _, name := range []string{"interrupted", "calm"} {
		if _, err := operatortest.Reconcile(t, h, c, name); err != nil {
			t.Fatal(err)
		}
	}
	got := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "interrupted"}}
	h.Get(t, got)
	if got.DeletionTimestamp.IsZero() {
		t.Fatal("interrupted NodeClaim not deleted at once")
	}
	if ts := got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ts != reclaimAt {
		t.Errorf("termination deadline = %q, want the reclaim time %q", ts, reclaimAt)
	}
	calm := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "calm"}}
	if h.Get(t, calm); !calm.DeletionTimestamp.IsZero() {
		t.Error("a node without a notice was deleted")
	}
	if offeringAvailable(t, cp, "test-zone-1", karpv1.CapacityTypeSpot) {
		t.Error("interrupted offering still available")
	}
	if !offeringAvailable(t, cp, "test-zone-2", karpv1.CapacityTypeSpot) || !offeringAvailable(t, cp, "test-zone-1", karpv1.CapacityTypeOnDemand) {
		t.Error("other offerings became unavailable")
	}
	h.WaitForEvent(t, "Node", "interrupted", interruption.ReasonSpotInterrupted)
	h.WaitForEvent(t, "NodeClaim", "interrupted", interruption.ReasonTerminatingOnInterruption)

	// A few minutes later the offering is usable again.
	h.Clock.Step(kwok.DefaultUnavailableOfferingsTTL + time.Second)
	if !offeringAvailable(t, cp, "test-zone-1", karpv1.CapacityTypeSpot) {
		t.Error("offering still unavailable after the TTL")
	}
}

func TestEarlierDeadlineIsKept(t *testing.T) {
	_, c := setup(t)
	earlier := h.Clock.Now().Add(30 * time.Second).UTC().Format(time.RFC3339)
	spotNode(t, "n", h.Clock.Now().Add(interruption.NoticePeriod).UTC().Format(time.RFC3339))
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	h.Get(t, nc)
	nc.Annotations = map[string]string{karpv1.NodeClaimTerminationTimestampAnnotationKey: earlier}
	if err := h.Env.Client.Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	if _, err := operatortest.Reconcile(t, h, c, "n"); err != nil {
		t.Fatal(err)
	}
	h.Get(t, nc)
	if ts := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ts != earlier {
		t.Errorf("deadline = %q, want the earlier %q kept", ts, earlier)
	}
}

func TestMalformedNoticeIsATerminalError(t *testing.T) {
	_, c := setup(t)
	spotNode(t, "n", "in two minutes")
	_, err := operatortest.Reconcile(t, h, c, "n")
	if !errors.Is(err, reconcile.TerminalError(nil)) {
		t.Fatalf("err = %v, want a terminal error", err)
	}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	if h.Get(t, nc); !nc.DeletionTimestamp.IsZero() {
		t.Error("deleted on a malformed notice")
	}
}

// With --replace-first, a notice whose first half holds a launch marks the
// NodeClaim to be replaced first, to be deleted half way through the
// notice at the latest (the drain keeps the other half, its deadline the
// reclaim time); a second reconcile changes nothing. A notice too short
// for a launch, or a NodeClaim not initialized yet, is deleted at once, as
// without the option.
func TestNoticeWithTimeToLaunchReplacesFirst(t *testing.T) {
	h.Reset(t)
	cp, err := kwok.New(h.Client, kwok.WithInstanceTypes(fake.DefaultInstanceTypes()), kwok.WithClock(h.Clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Close)
	c := interruption.NewController(h.Client, cp, h.Clock, h.Recorder, interruption.WithReplaceFirst(true))
	now := h.Clock.Now()
	reclaimAt := now.Add(interruption.NoticePeriod)
	spotNode(t, "warned", reclaimAt.UTC().Format(time.RFC3339))
	spotNode(t, "short", now.Add(15*time.Second).UTC().Format(time.RFC3339))
	spotNode(t, "starting", reclaimAt.UTC().Format(time.RFC3339))
	for _, name := range []string{"warned", "short"} {
		initialized(t, name)
	}

	for range 2 {
		for _, name := range []string{"warned", "short", "starting"} {
			if _, err := operatortest.Reconcile(t, h, c, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	warned := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "warned"}}
	if !h.Get(t, warned) || !warned.DeletionTimestamp.IsZero() {
		t.Fatal("NodeClaim with a 2m notice deleted at once, want it marked for replacement first")
	}
	by, why, ok := warned.ReplaceBy()
	if !ok || why != "interrupted" || !by.Equal(now.Add(time.Minute).Truncate(time.Second)) {
		t.Errorf("replace-by = %s (%q, valid %v), want %s (interrupted)", by, why, ok, now.Add(time.Minute).Truncate(time.Second))
	}
	if got := warned.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; got != reclaimAt.UTC().Format(time.RFC3339) {
		t.Errorf("termination deadline %q, want the reclaim time %s", got, reclaimAt.UTC().Format(time.RFC3339))
	}
	short := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "short"}}
	if h.Get(t, short) && short.DeletionTimestamp.IsZero() {
		t.Error("NodeClaim with a 15s notice not deleted at once")
	}
	// Not initialized: it runs no pods to protect, so it goes at once.
	starting := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "starting"}}
	if h.Get(t, starting) && starting.DeletionTimestamp.IsZero() {
		t.Error("uninitialized NodeClaim not deleted at once")
	}
	if note := h.EventNote(t, "NodeClaim", "warned", interruption.ReasonTerminatingOnInterruption); !strings.Contains(note, "replacement first") {
		t.Errorf("%s note %q does not say the replacement comes first", interruption.ReasonTerminatingOnInterruption, note)
	}
}

// initialized marks the NodeClaim Initialized.
func initialized(t *testing.T, name string) {
	t.Helper()
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	h.Get(t, nc)
	nc.StatusConditions().SetTrue(karpv1.ConditionTypeInitialized)
	h.UpdateStatus(t, nc)
}
