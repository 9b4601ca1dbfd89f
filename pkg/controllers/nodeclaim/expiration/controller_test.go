package expiration_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/expiration"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// create stores the NodeClaim (with a finalizer, so deletion is
// observable) and sets the fake clock to its creation time.
func create(t *testing.T, nc *karpv1.NodeClaim) *karpv1.NodeClaim {
	t.Helper()
	nc.Finalizers = []string{karpv1.TerminationFinalizer}
	h.Create(t, nc)
	h.Get(t, nc)
	h.Clock.SetTime(nc.CreationTimestamp.Time)
	return nc
}

func deleting(t *testing.T, name string) bool {
	t.Helper()
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return !h.Get(t, nc) || !nc.DeletionTimestamp.IsZero()
}

func TestExpiresAtCreationPlusExpireAfter(t *testing.T) {
	h.Reset(t)
	c := expiration.NewController(h.Client, fake.New(), h.Clock)
	h.Create(t, test.MakeNodePool("p").Obj())
	nc := create(t, test.MakeNodeClaim("c").NodePool("p").Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot).
		ExpireAfter(karpv1.NewNillableDuration(2*time.Minute)).Obj())
	counter := metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.ReasonExpired, "p", karpv1.CapacityTypeSpot,
		string(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized), metrics.TerminationModeForceful)
	before := testutil.ToFloat64(counter)

	h.Clock.Step(time.Minute)
	res, err := operatortest.Reconcile(t, h, c, nc.Name)
	if err != nil {
		t.Fatal(err)
	}
	if deleting(t, nc.Name) {
		t.Fatal("deleted before expiry")
	}
	if res.RequeueAfter != time.Minute {
		t.Errorf("RequeueAfter = %s, want the minute left", res.RequeueAfter)
	}
	h.Clock.Step(time.Minute)
	if _, err := operatortest.Reconcile(t, h, c, nc.Name); err != nil {
		t.Fatal(err)
	}
	if !deleting(t, nc.Name) {
		t.Fatal("not deleted at expiry")
	}
	if got := testutil.ToFloat64(counter) - before; got != 1 {
		t.Errorf("disrupted_total{reason=expired} grew by %v, want 1", got)
	}
}

func TestNeverAndForeignNodeClaimsDoNotExpire(t *testing.T) {
	h.Reset(t)
	c := expiration.NewController(h.Client, fake.New(), h.Clock)
	never := create(t, test.MakeNodeClaim("never").ExpireAfter(karpv1.NillableDuration{}).Obj())
	foreign := test.MakeNodeClaim("foreign").ExpireAfter(karpv1.NewNillableDuration(time.Minute)).
		NodeClassRef(&karpv1.NodeClassReference{Group: "example.com", Kind: "OtherNodeClass", Name: "x"}).Obj()
	foreign = create(t, foreign)
	h.Clock.Step(1000 * time.Hour)
	for _, nc := range []*karpv1.NodeClaim{never, foreign} {
		res, err := operatortest.Reconcile(t, h, c, nc.Name)
		if err != nil {
			t.Fatal(err)
		}
		if deleting(t, nc.Name) || res.RequeueAfter != 0 {
			t.Errorf("%s: deleting=%v requeue=%s, want untouched", nc.Name, deleting(t, nc.Name), res.RequeueAfter)
		}
	}
}

// A replace-by deadline (an interruption or repair the disruption
// controller had until then to replace first) deletes the NodeClaim when
// it comes, before a later expiry, counted under the annotation's reason;
// until then the controller requeues for it.
func TestDeletesAtTheReplaceByDeadline(t *testing.T) {
	h.Reset(t)
	c := expiration.NewController(h.Client, fake.New(), h.Clock)
	h.Create(t, test.MakeNodePool("p").Obj())
	nc := test.MakeNodeClaim("interrupted").NodePool("p").Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot).
		ExpireAfter(karpv1.NewNillableDuration(time.Hour)).Obj()
	nc = create(t, nc)
	by := nc.CreationTimestamp.Add(time.Minute)
	nc.Annotations = map[string]string{karpv1.ReplaceByAnnotationKey: by.UTC().Format(time.RFC3339),
		karpv1.ReplaceReasonAnnotationKey: metrics.ReasonInterrupted}
	if err := h.Client.Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	counter := metrics.NodeClaimsDisruptedTotal.WithLabelValues(metrics.ReasonInterrupted, "p", karpv1.CapacityTypeSpot,
		string(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized), metrics.TerminationModeForceful)
	before := testutil.ToFloat64(counter)

	h.Clock.Step(20 * time.Second)
	res, err := operatortest.Reconcile(t, h, c, nc.Name)
	if err != nil {
		t.Fatal(err)
	}
	if deleting(t, nc.Name) {
		t.Fatal("deleted before its replace-by deadline")
	}
	if res.RequeueAfter != 40*time.Second {
		t.Errorf("RequeueAfter = %s, want the 40s left to the replace-by deadline (not the hour to expiry)", res.RequeueAfter)
	}
	h.Clock.Step(40 * time.Second)
	if _, err := operatortest.Reconcile(t, h, c, nc.Name); err != nil {
		t.Fatal(err)
	}
	if !deleting(t, nc.Name) {
		t.Fatal("not deleted at its replace-by deadline")
	}
	if got := testutil.ToFloat64(counter) - before; got != 1 {
		t.Errorf("disrupted_total{reason=interrupted} grew by %v, want 1", got)
	}
}
