package capacitytype_test

import (
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/capacityreservation/capacitytype"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
)

const reservationID = "cr-0123456789abcdef0"

// reservedWorld is the AWS provider on the fakes with a one-instance
// on-demand capacity reservation an EC2NodeClass selects, and the
// controller over the provider.
type reservedWorld struct {
	*awstest.World
	nodeClass  *awsv1.EC2NodeClass
	controller *capacitytype.Controller
}

func newReservedWorld(t *testing.T) *reservedWorld {
	t.Helper()
	t.Cleanup(func() { h.Reset(t) })
	nodeClass := awstest.CreateNodeClass(t, h.Env.Client, awstest.NewNodeClass(nil), true)
	nodeClass.Status.CapacityReservations = []awsv1.CapacityReservation{{
		ID: reservationID, AvailabilityZone: awstest.Zones[0].Name, InstanceType: "m5.large",
		InstanceMatchCriteria: "targeted", OwnerID: fake.AccountID, ReservationType: "default", State: "active",
	}}
	h.UpdateStatus(t, nodeClass)
	w := awstest.NewWorld(t, h.Env)
	w.EC2.AddCapacityReservations(fake.NewCapacityReservation(reservationID, "m5.large", awstest.Zones[0].Name, 1, nil))
	return &reservedWorld{World: w, nodeClass: nodeClass, controller: capacitytype.NewController(h.Client, w.Provider)}
}

// launch launches a reserved instance and stores its NodeClaim as the
// lifecycle controller would, with a registered Node when withNode.
func (w *reservedWorld) launch(t *testing.T, withNode bool) (*karpv1.NodeClaim, *corev1.Node) {
	t.Helper()
	launched, err := w.Provider.Create(t.Context(), awstest.NewNodeClaim("reserved", w.nodeClass.Name))
	if err != nil {
		t.Fatal(err)
	}
	if launched.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeReserved {
		t.Fatalf("launched %v, want a reserved instance", launched.Labels)
	}
	nodeClaim := test.MakeNodeClaim(launched.Name).Labels(launched.Labels).NodeClassRef(launched.Spec.NodeClassRef).Obj()
	h.Create(t, nodeClaim)
	nodeClaim.Status.ProviderID = launched.Status.ProviderID
	h.UpdateStatus(t, nodeClaim)
	if !withNode {
		return nodeClaim, nil
	}
	node := test.MakeNode("node-"+launched.Name).Labels(launched.Labels).Label(karpv1.NodeRegisteredLabelKey, "true").
		ProviderID(launched.Status.ProviderID).Obj()
	h.Create(t, node)
	return nodeClaim, node
}

func (w *reservedWorld) reconcile(t *testing.T) reconcile.Result {
	t.Helper()
	h.Synced(t)
	res, err := w.controller.Reconcile(t.Context(), reconcile.Request{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// capacityLabels are the labels the controller may change.
func capacityLabels(t *testing.T, obj interface {
	GetLabels() map[string]string
	GetName() string
}) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range append([]string{karpv1.CapacityTypeLabelKey}, capacitytype.ReservationLabels...) {
		if v, ok := obj.GetLabels()[k]; ok {
			out[k] = v
		}
	}
	return out
}

var (
	// reserved are the labels a Node boots with in a reservation.
	reserved = map[string]string{
		karpv1.CapacityTypeLabelKey:      karpv1.CapacityTypeReserved,
		awsv1.LabelCapacityReservationID: reservationID, awsv1.LabelCapacityReservationType: "default",
		scheduling.LabelReservationID: reservationID,
	}
	onDemand = map[string]string{karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand}
)

// A NodeClaim and its Node stay reserved while the instance is in its
// reservation, and turn on-demand once the reservation is cancelled.
func TestDemotesWhenTheReservationEnds(t *testing.T) {
	w := newReservedWorld(t)
	nodeClaim, node := w.launch(t, true)
	launched := capacityLabels(t, nodeClaim)
	if launched[awsv1.LabelCapacityReservationID] != reservationID || launched[scheduling.LabelReservationID] != reservationID {
		t.Fatalf("launched with %v, want labels naming %s", launched, reservationID)
	}

	if res := w.reconcile(t); res.RequeueAfter != capacitytype.Period {
		t.Errorf("requeue after %v, want %v", res.RequeueAfter, capacitytype.Period)
	}
	h.Get(t, nodeClaim)
	h.Get(t, node)
	if diff := cmp.Diff(launched, capacityLabels(t, nodeClaim)); diff != "" {
		t.Errorf("nodeclaim in its reservation (-want,+got)\n%s", diff)
	}
	if diff := cmp.Diff(launched, capacityLabels(t, node)); diff != "" {
		t.Errorf("node in its reservation (-want,+got)\n%s", diff)
	}

	w.EC2.SetCapacityReservationState(reservationID, ec2types.CapacityReservationStateCancelled)
	w.reconcile(t)

	h.Get(t, nodeClaim)
	h.Get(t, node)
	if diff := cmp.Diff(onDemand, capacityLabels(t, nodeClaim)); diff != "" {
		t.Errorf("nodeclaim after the reservation ended (-want,+got)\n%s", diff)
	}
	if diff := cmp.Diff(onDemand, capacityLabels(t, node)); diff != "" {
		t.Errorf("node after the reservation ended (-want,+got)\n%s", diff)
	}
	if nodeClaim.Labels[corev1.LabelInstanceTypeStable] != "m5.large" || node.Labels[karpv1.NodeRegisteredLabelKey] != "true" {
		t.Errorf("other labels changed: nodeclaim %v, node %v", nodeClaim.Labels, node.Labels)
	}
}

// A Node registered after its NodeClaim was demoted is demoted on a
// later pass; an unregistered Node is left for then.
func TestDemotesANodeRegisteredLater(t *testing.T) {
	w := newReservedWorld(t)
	nodeClaim, _ := w.launch(t, false)
	w.EC2.SetCapacityReservationState(reservationID, ec2types.CapacityReservationStateExpired)
	w.reconcile(t)
	h.Get(t, nodeClaim)
	if diff := cmp.Diff(onDemand, capacityLabels(t, nodeClaim)); diff != "" {
		t.Errorf("nodeclaim (-want,+got)\n%s", diff)
	}

	// The Node appears with the labels it booted with (reserved).
	node := test.MakeNode("node-" + nodeClaim.Name).Labels(reserved).ProviderID(nodeClaim.Status.ProviderID).Obj()
	h.Create(t, node)
	w.reconcile(t)
	h.Get(t, node)
	if diff := cmp.Diff(reserved, capacityLabels(t, node)); diff != "" {
		t.Errorf("unregistered node (-want,+got)\n%s", diff)
	}

	node.Labels[karpv1.NodeRegisteredLabelKey] = "true"
	if err := h.Env.Client.Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	w.reconcile(t)
	h.Get(t, node)
	if diff := cmp.Diff(onDemand, capacityLabels(t, node)); diff != "" {
		t.Errorf("registered node (-want,+got)\n%s", diff)
	}
}

// A deleting NodeClaim is draining already: it is left as it is.
func TestLeavesDeletingNodeClaims(t *testing.T) {
	w := newReservedWorld(t)
	nodeClaim, _ := w.launch(t, false)
	launched := capacityLabels(t, nodeClaim)
	nodeClaim.Finalizers = []string{karpv1.TerminationFinalizer}
	if err := h.Env.Client.Update(t.Context(), nodeClaim); err != nil {
		t.Fatal(err)
	}
	if err := h.Env.Client.Delete(t.Context(), nodeClaim); err != nil {
		t.Fatal(err)
	}
	w.EC2.SetCapacityReservationState(reservationID, ec2types.CapacityReservationStateCancelled)
	w.reconcile(t)
	h.Get(t, nodeClaim)
	if diff := cmp.Diff(launched, capacityLabels(t, nodeClaim)); diff != "" {
		t.Errorf("deleting nodeclaim (-want,+got)\n%s", diff)
	}
}
