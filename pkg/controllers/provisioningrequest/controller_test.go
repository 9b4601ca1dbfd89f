package provisioningrequest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioningrequest"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/controllertest"
)

const (
	checkCapacity = autoscalingv1.ProvisioningClassCheckCapacity
	atomic        = autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp
	ns            = controllertest.Namespace
)

// smallType holds two of the tests' 1-cpu pods.
var smallType = fake.NewInstanceType(fake.InstanceTypeOptions{Name: "small", Resources: test.ResourceList("cpu", "2", "memory", "4Gi", "pods", "10"),
	Offerings: []*cloudprovider.Offering{{Zone: "test-zone-1", CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.10, Available: true}}})

type harness struct {
	*controllertest.Harness
	controller *provisioningrequest.Controller
}

func newHarness(t *testing.T) *harness {
	base := controllertest.New(t, env, statecontrollers.Register, fake.New(smallType))
	h := &harness{Harness: base, controller: provisioningrequest.NewController(base.Manager.GetClient(), base.Client, base.Provider,
		base.Cluster, base.Clock, base.Recorder, provisioningrequest.Options{})}
	// Runs before the harness's own cleanup, while its context lives.
	t.Cleanup(func() {
		ctx := base.Ctx
		_ = base.Client.DeleteAllOf(ctx, &autoscalingv1.ProvisioningRequest{}, client.InNamespace(ns))
		_ = base.Client.DeleteAllOf(ctx, &corev1.PodTemplate{}, client.InNamespace(ns))
	})
	return h
}

// template creates a PodTemplate of pods requesting cpu.
func (h *harness) template(name, cpu string) {
	h.T.Helper()
	h.Create(&corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Template: corev1.PodTemplateSpec{Spec: test.MakePod("x").Requests("cpu", cpu).Obj().Spec}})
}

// request creates a ProvisioningRequest for count pods of the template.
func (h *harness) request(name, class, tmpl string, count int32, params map[string]autoscalingv1.Parameter) {
	h.T.Helper()
	h.Create(&autoscalingv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: autoscalingv1.ProvisioningRequestSpec{ProvisioningClassName: class, Parameters: params,
			PodSets: []autoscalingv1.PodSet{{PodTemplateRef: autoscalingv1.Reference{Name: tmpl}, Count: count}}}})
}

func (h *harness) get(name string) *autoscalingv1.ProvisioningRequest {
	h.T.Helper()
	pr := &autoscalingv1.ProvisioningRequest{}
	if err := h.Client.Get(h.Ctx, types.NamespacedName{Namespace: ns, Name: name}, pr); err != nil {
		h.T.Fatalf("getting ProvisioningRequest %s: %v", name, err)
	}
	return pr
}

// reconcile runs one reconcile once the cache holds the request as the
// API server does and the state is synced.
func (h *harness) reconcile(name string) reconcile.Result {
	h.T.Helper()
	h.StateSynced()
	want := h.get(name)
	h.Eventually("ProvisioningRequest "+name+" cached at its version", func() bool {
		cached := &autoscalingv1.ProvisioningRequest{}
		return h.Manager.GetClient().Get(h.Ctx, client.ObjectKeyFromObject(want), cached) == nil &&
			cached.ResourceVersion == want.ResourceVersion
	})
	res, err := h.controller.Reconcile(h.Ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(want)})
	if err != nil {
		h.T.Fatalf("reconcile: %v", err)
	}
	return res
}

// condition returns "Status/Reason" of the request's condition, "" when unset.
func (h *harness) condition(name, conditionType string) string {
	c := meta.FindStatusCondition(h.get(name).Status.Conditions, conditionType)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason
}

func (h *harness) expectCondition(name, conditionType, want string) {
	h.T.Helper()
	if got := h.condition(name, conditionType); got != want {
		c := meta.FindStatusCondition(h.get(name).Status.Conditions, conditionType)
		h.T.Fatalf("%s %s = %q, want %q (%+v)", name, conditionType, got, want, c)
	}
}

// claimsOf lists the NodeClaims launched for the request, not being deleted.
func (h *harness) claimsOf(name string) []karpv1.NodeClaim {
	h.T.Helper()
	var list karpv1.NodeClaimList
	if err := h.Client.List(h.Ctx, &list, client.MatchingLabels{provisioningrequest.RequestUIDLabelKey: string(h.get(name).UID)}); err != nil {
		h.T.Fatalf("listing nodeclaims: %v", err)
	}
	var out []karpv1.NodeClaim
	for _, nc := range list.Items {
		if nc.DeletionTimestamp == nil {
			out = append(out, nc)
		}
	}
	return out
}

func (h *harness) allClaims() int {
	h.T.Helper()
	var list karpv1.NodeClaimList
	if err := h.Client.List(h.Ctx, &list); err != nil {
		h.T.Fatalf("listing nodeclaims: %v", err)
	}
	return len(list.Items)
}

// launched marks the NodeClaim launched, as the lifecycle controller would.
func (h *harness) launched(nc *karpv1.NodeClaim) {
	h.T.Helper()
	nc.Status.ProviderID = "fake://" + nc.Name
	nc.StatusConditions().SetTrue(karpv1.ConditionTypeLaunched)
	if err := h.Client.Status().Update(h.Ctx, nc); err != nil {
		h.T.Fatalf("launching nodeclaim: %v", err)
	}
}

// node creates a Ready Node (not karp's) with cpu cores.
func (h *harness) node(name, cpu string) {
	h.T.Helper()
	node := test.MakeNode(name).Obj()
	h.Create(node)
	node.Status.Capacity = test.ResourceList("cpu", cpu, "memory", "8Gi", "pods", "20")
	node.Status.Allocatable = node.Status.Capacity
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := h.Client.Status().Update(h.Ctx, node); err != nil {
		h.T.Fatalf("updating node status: %v", err)
	}
	// The API server's admission taints a new Node not-ready; no node
	// lifecycle controller runs here to lift it.
	node.Spec.Taints = nil
	if err := h.Client.Update(h.Ctx, node); err != nil {
		h.T.Fatalf("lifting the not-ready taint: %v", err)
	}
	h.Eventually("node "+name+" in state with its capacity, untainted", func() bool {
		for _, sn := range h.Cluster.Nodes() {
			if sn.Node != nil && sn.Node.Name == name && !sn.Node.Status.Allocatable.Cpu().IsZero() && len(sn.Node.Spec.Taints) == 0 {
				return true
			}
		}
		return false
	})
}

// TestUnknownClassIsLeftAlone: a class karp does not serve gets no
// condition at all (another autoscaler may serve it).
func TestUnknownClassIsLeftAlone(t *testing.T) {
	h := newHarness(t)
	h.template("worker", "1")
	h.request("other", "queued-provisioning.gke.io", "worker", 1, nil)
	h.reconcile("other")
	if conds := h.get("other").Status.Conditions; len(conds) != 0 {
		t.Errorf("conditions = %+v, want none", conds)
	}
}

// TestCheckCapacity: a request whose pods fit the existing nodes is
// Accepted and Provisioned (CapacityIsFound) with nothing launched, and
// its booking expires after the booking period; one with a pod too many
// is Provisioned=False (CapacityIsNotFound), retried, still launching
// nothing even though a NodePool could.
func TestCheckCapacity(t *testing.T) {
	h := newHarness(t)
	h.ReadyNodePool(test.MakeNodePool("default").Obj())
	h.node("existing", "4")
	h.template("worker", "1")
	h.request("fits", checkCapacity, "worker", 4, nil)
	h.request("too-big", checkCapacity, "worker", 5, nil)

	h.reconcile("fits")
	h.expectCondition("fits", autoscalingv1.Accepted, "True/Accepted")
	h.expectCondition("fits", autoscalingv1.Provisioned, "True/CapacityIsFound")
	if res := h.reconcile("too-big"); res.RequeueAfter <= 0 {
		t.Errorf("a request that does not fit is not retried: %+v", res)
	}
	h.expectCondition("too-big", autoscalingv1.Accepted, "True/Accepted")
	h.expectCondition("too-big", autoscalingv1.Provisioned, "False/CapacityIsNotFound")
	if note := h.EventNote(h.get("too-big"), provisioningrequest.ReasonCapacityIsNotFound); !strings.Contains(note, "1 of 5 pods do not fit") {
		t.Errorf("CapacityIsNotFound event = %q", note)
	}
	if n := h.allClaims(); n != 0 {
		t.Fatalf("%d NodeClaims, want none", n)
	}
	// Within the booking period nothing changes; after it, BookingExpired.
	h.Clock.Step(9 * time.Minute)
	if res := h.reconcile("fits"); res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute+time.Second {
		t.Errorf("booked request requeued after %s, want at the booking's end (about a minute)", res.RequeueAfter)
	}
	h.expectCondition("fits", autoscalingv1.BookingExpired, "")
	h.Clock.Step(time.Minute + time.Second)
	h.reconcile("fits")
	h.expectCondition("fits", autoscalingv1.BookingExpired, "True/BookingExpired")
	h.expectCondition("fits", autoscalingv1.Provisioned, "True/CapacityIsFound")
}

// TestAtomicScaleUp: a request that fits the NodePool's limit gets all its
// NodeClaims at once, booked (do-not-disrupt) and marked with the request;
// Provisioned once they all launched; at BookingExpired the booking
// annotations go. A second request beyond the limit launches nothing.
func TestAtomicScaleUp(t *testing.T) {
	h := newHarness(t)
	h.ReadyNodePool(test.MakeNodePool("default").Limits(test.ResourceList("cpu", "6")).Obj())
	h.template("worker", "1")
	h.request("gang", atomic, "worker", 4, nil)

	h.reconcile("gang")
	h.expectCondition("gang", autoscalingv1.Accepted, "True/Accepted")
	h.expectCondition("gang", autoscalingv1.Provisioned, "False/CapacityIsBeingProvisioned")
	claims := h.claimsOf("gang")
	if len(claims) != 2 {
		t.Fatalf("%d NodeClaims, want 2 (4 one-cpu pods on two-cpu nodes)", len(claims))
	}
	for _, nc := range claims {
		got := fmt.Sprintf("%s %s %s %s", nc.Annotations[karpv1.DoNotDisruptAnnotationKey], nc.Annotations[provisioningrequest.BookedAnnotationKey],
			nc.Annotations[provisioningrequest.RequestAnnotationKey], nc.Annotations[provisioningrequest.LaunchSizeAnnotationKey])
		if want := "true true default/gang 2"; got != want {
			t.Errorf("NodeClaim %s annotations %q, want %q", nc.Name, got, want)
		}
	}
	// One launched: still waiting; both: Provisioned.
	h.launched(&claims[0])
	h.reconcile("gang")
	h.expectCondition("gang", autoscalingv1.Provisioned, "False/CapacityIsBeingProvisioned")
	h.launched(&claims[1])
	h.reconcile("gang")
	h.expectCondition("gang", autoscalingv1.Provisioned, "True/CapacityIsProvisioned")

	// 6 more cpu do not fit next to the 4 launched under a 6-cpu limit.
	h.request("too-big", atomic, "worker", 6, nil)
	h.reconcile("too-big")
	h.expectCondition("too-big", autoscalingv1.Provisioned, "False/CapacityIsNotFound")
	if n := len(h.claimsOf("too-big")); n != 0 {
		t.Errorf("%d NodeClaims for a request that does not fit, want none", n)
	}

	h.Clock.Step(10*time.Minute + time.Second)
	h.reconcile("gang")
	h.expectCondition("gang", autoscalingv1.BookingExpired, "True/BookingExpired")
	for _, nc := range h.claimsOf("gang") {
		if _, ok := nc.Annotations[karpv1.DoNotDisruptAnnotationKey]; ok {
			t.Errorf("NodeClaim %s still has do-not-disrupt after the booking", nc.Name)
		}
		if _, ok := nc.Annotations[provisioningrequest.BookedAnnotationKey]; ok {
			t.Errorf("NodeClaim %s still booked after the booking", nc.Name)
		}
	}
}

// TestAtomicRollsBack: when one NodeClaim of the launch is deleted before
// launching (no capacity), the other is deleted too and the request is
// not provisioned; once they are gone and the retry period passed, the
// next attempt launches a fresh set.
func TestAtomicRollsBack(t *testing.T) {
	h := newHarness(t)
	h.ReadyNodePool(test.MakeNodePool("default").Obj())
	h.template("worker", "1")
	h.request("gang", atomic, "worker", 4, nil)
	h.reconcile("gang")
	claims := h.claimsOf("gang")
	if len(claims) != 2 {
		t.Fatalf("%d NodeClaims, want 2", len(claims))
	}
	h.launched(&claims[0])
	if err := h.Client.Delete(h.Ctx, &claims[1]); err != nil {
		t.Fatal(err)
	}
	h.reconcile("gang")
	h.expectCondition("gang", autoscalingv1.Provisioned, "False/CapacityIsNotFound")
	if n := len(h.claimsOf("gang")); n != 0 {
		t.Fatalf("%d NodeClaims left after the roll-back, want none", n)
	}
	// Let the deletions finish, as the termination controller would.
	var list karpv1.NodeClaimList
	if err := h.Client.List(h.Ctx, &list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		nc := &list.Items[i]
		nc.Finalizers = nil
		if err := h.Client.Update(h.Ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	h.Eventually("rolled-back NodeClaims gone", func() bool { return h.allClaims() == 0 })
	// Before the retry period: no new attempt.
	if res := h.reconcile("gang"); res.RequeueAfter <= 0 {
		t.Errorf("held-back attempt not requeued: %+v", res)
	}
	if n := h.allClaims(); n != 0 {
		t.Fatalf("%d NodeClaims created within the retry period, want none", n)
	}
	h.Clock.Step(31 * time.Second)
	h.reconcile("gang")
	if n := len(h.claimsOf("gang")); n != 2 {
		t.Fatalf("%d NodeClaims after the retry, want 2", n)
	}
	h.expectCondition("gang", autoscalingv1.Provisioned, "False/CapacityIsBeingProvisioned")
}

// TestAtomicFailsAfterValidUntilSeconds: a request that never fits fails
// (Expired) once ValidUntilSeconds passed; a Failed request stays so.
func TestAtomicFailsAfterValidUntilSeconds(t *testing.T) {
	h := newHarness(t)
	h.ReadyNodePool(test.MakeNodePool("default").Limits(test.ResourceList("cpu", "2")).Obj())
	h.template("worker", "1")
	h.request("gang", atomic, "worker", 4, map[string]autoscalingv1.Parameter{autoscalingv1.ValidUntilSecondsParameter: "60"})
	h.reconcile("gang")
	h.expectCondition("gang", autoscalingv1.Provisioned, "False/CapacityIsNotFound")
	h.expectCondition("gang", autoscalingv1.Failed, "")
	h.Clock.Step(2 * time.Minute)
	h.reconcile("gang")
	h.expectCondition("gang", autoscalingv1.Failed, "True/Expired")
	h.reconcile("gang")
	h.expectCondition("gang", autoscalingv1.Failed, "True/Expired")
	if n := h.allClaims(); n != 0 {
		t.Errorf("%d NodeClaims, want none", n)
	}
}

// TestMissingTemplateFails: a request whose PodTemplate does not exist is
// waited for, then fails with FailedToCreatePods.
func TestMissingTemplateFails(t *testing.T) {
	h := newHarness(t)
	h.request("orphan", checkCapacity, "nowhere", 1, nil)
	h.reconcile("orphan")
	h.expectCondition("orphan", autoscalingv1.Accepted, "True/Accepted")
	h.expectCondition("orphan", autoscalingv1.Failed, "")
	h.Clock.Step(2 * time.Minute)
	h.reconcile("orphan")
	h.expectCondition("orphan", autoscalingv1.Failed, "True/FailedToCreatePods")
}

// TestCheckCapacityBooksTheRoom: a check-capacity request found room and
// books it for its booking period: a second request that would fit only
// in that room is not found, though it fits the node alone; one of the
// first request's pods arriving gives back nothing (it stands for a booked
// one); when the first booking expires, the second request is found.
func TestCheckCapacityBooksTheRoom(t *testing.T) {
	h := newHarness(t)
	bookings := buffers.NewBookings()
	h.controller.WithBookings(bookings)
	h.ReadyNodePool(test.MakeNodePool("default").Obj())
	h.node("existing", "4")
	h.template("worker", "1")
	h.request("first", checkCapacity, "worker", 3, nil)
	h.request("second", checkCapacity, "worker", 2, nil)

	h.reconcile("first")
	h.expectCondition("first", autoscalingv1.Provisioned, "True/CapacityIsFound")
	if !bookings.Has(types.NamespacedName{Namespace: ns, Name: "first"}) {
		t.Fatal("the found request holds no booking")
	}
	h.reconcile("second")
	h.expectCondition("second", autoscalingv1.Provisioned, "False/CapacityIsNotFound")

	h.Clock.Step(provisioningrequest.DefaultBookingPeriod + time.Second)
	h.reconcile("first")
	h.expectCondition("first", autoscalingv1.BookingExpired, "True/BookingExpired")
	if bookings.Has(types.NamespacedName{Namespace: ns, Name: "first"}) {
		t.Error("an expired booking still holds room")
	}
	h.reconcile("second")
	h.expectCondition("second", autoscalingv1.Provisioned, "True/CapacityIsFound")
}

// TestBookingIsMadeAgainAfterARestart: a controller that starts with a
// request already provisioned (a restart) books it again.
func TestBookingIsMadeAgainAfterARestart(t *testing.T) {
	h := newHarness(t)
	h.ReadyNodePool(test.MakeNodePool("default").Obj())
	h.node("existing", "4")
	h.template("worker", "1")
	h.request("first", checkCapacity, "worker", 3, nil)
	h.reconcile("first") // a controller without bookings, as before the restart
	h.expectCondition("first", autoscalingv1.Provisioned, "True/CapacityIsFound")

	bookings := buffers.NewBookings()
	h.controller = provisioningrequest.NewController(h.Manager.GetClient(), h.Client, h.Provider, h.Cluster, h.Clock, h.Recorder,
		provisioningrequest.Options{}).WithBookings(bookings)
	h.reconcile("first")
	if got := len(bookings.Pods(nil, nil)); got != 3 {
		t.Errorf("after the restart the request books %d pods, want 3", got)
	}
}
