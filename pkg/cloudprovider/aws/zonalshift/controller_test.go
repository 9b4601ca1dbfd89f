package zonalshift_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	awsoptions "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/options"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/zonalshift"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
)

// recorded is one event published.
type recorded struct {
	Object, Type, Reason, Message string
}

// recorder keeps the events published, with the object they regard.
type recorder struct {
	mu     sync.Mutex
	events []recorded
}

func (r *recorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recorded{Object: regarding.(client.Object).GetName(), Type: eventtype, Reason: reason, Message: fmt.Sprintf(note, args...)})
}

// take returns the events published since the last take.
func (r *recorder) take() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// world is the AWS provider as aws.NewProvider builds it with
// --enable-zonal-shift, over the account's fakes and an in-memory client
// holding one ready EC2NodeClass and its NodePools.
type world struct {
	account   *fake.Account
	arc       *fake.ARC
	arn       string
	provider  *aws.Provider
	nodeClass *awsv1.EC2NodeClass
	recorder  *recorder
}

func newWorld(t *testing.T, enable bool, objects ...client.Object) *world {
	t.Helper()
	clk := clock.RealClock{} // the launch batches run on it; shifts end by cancellation here
	account, err := fake.NewAccount(fake.AccountOptions{Region: region, ClusterName: clusterName, Clock: clk, SpotPrices: true,
		CatalogFleetPrices: true, EKSCluster: &fake.EKSCluster{Endpoint: "https://test-cluster.example"}})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{account: account, arc: fake.NewARC(clk), recorder: &recorder{}}
	w.arn = clusterARN(t, account.EKS)
	w.arc.AddManagedResource(w.arn)

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, networkingv1.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	w.nodeClass = awstest.NewNodeClass(func(nc *awsv1.EC2NodeClass) { nc.Name = nodeClassName })
	for _, z := range zones {
		w.nodeClass.Status.Subnets = append(w.nodeClass.Status.Subnets, awsv1.Subnet{ID: "subnet-" + z.Name, Zone: z.Name, ZoneID: z.ID})
	}
	w.nodeClass.Status.SecurityGroups = []awsv1.SecurityGroup{{ID: "sg-test1", Name: "nodes"}}
	w.nodeClass.Status.AMIs = awstest.StatusAMIs
	w.nodeClass.Status.InstanceProfile = "test-profile"
	conditions := w.nodeClass.StatusConditions()
	for _, c := range []string{awsv1.ConditionTypeAMIsReady, awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeInstanceProfileReady,
		awsv1.ConditionTypeCapacityReservationsReady, awsv1.ConditionTypeValidationSucceeded, awsv1.ConditionTypePlacementGroupReady} {
		conditions.SetTrue(c)
	}
	// The cluster facts user data needs: the service CIDR and kube-dns.
	objects = append(objects, w.nodeClass,
		&networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.0/12"}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10"}})
	kubeClient := crfake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()

	opts := &awsoptions.Options{
		ClusterName:             clusterName,
		ClusterEndpoint:         "https://test-cluster.example",
		ClusterCABundle:         base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n")),
		VMMemoryOverheadPercent: awsoptions.DefaultVMMemoryOverheadPercent,
		AMIRefreshInterval:      awsoptions.DefaultRefreshInterval,
		SubnetRefreshInterval:   awsoptions.DefaultRefreshInterval,
		SSMAliasCacheTTL:        awsoptions.DefaultSSMAliasCacheTTL,
		EnableZonalShift:        enable,
	}
	w.provider, err = aws.NewProvider(t.Context(), aws.Dependencies{
		KubeClient: kubeClient, APIReader: kubeClient, Recorder: w.recorder, Clock: clk, Options: opts,
		Registerer: prometheus.NewRegistry(), RestConfig: &rest.Config{Host: "https://unreachable.invalid"},
	}, aws.Clients{Region: region, EC2: account.EC2, Pricing: account.Pricing, SSM: account.SSM, IAM: account.IAM, EKS: account.EKS, ARCZonalShift: w.arc})
	if err != nil {
		t.Fatalf("building the AWS provider: %v", err)
	}
	return w
}

// reconcileShifts runs one pass of the provider's zonalshift controller.
func (w *world) reconcileShifts(t *testing.T) {
	t.Helper()
	for _, c := range w.provider.Controllers {
		if c.Name() != "zonalshift" {
			continue
		}
		res, err := c.(reconcile.Reconciler).Reconcile(t.Context(), reconcile.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != zonalshift.Period || zonalshift.Period != 30*time.Second {
			t.Errorf("requeue after %s, want 30s", res.RequeueAfter)
		}
		return
	}
	t.Fatal("the provider has no zonalshift controller")
}

// launchZones launches a NodeClaim with the requirements and returns the
// zones of its CreateFleet overrides (each checked against its subnet).
func (w *world) launchZones(t *testing.T, requirements ...karpv1.NodeSelectorRequirementWithMinValues) ([]string, error) {
	t.Helper()
	nodeClaim := awstest.NewNodeClaim("shift", w.nodeClass.Name)
	nodeClaim.Spec.Requirements = append(nodeClaim.Spec.Requirements, requirements...)
	before := len(w.account.EC2.CreateFleetInputs())
	_, err := w.provider.CloudProvider.Create(context.WithoutCancel(t.Context()), nodeClaim)
	inputs := w.account.EC2.CreateFleetInputs()
	out := sets.New[string]()
	for _, in := range inputs[before:] {
		for _, cfg := range in.LaunchTemplateConfigs {
			for _, o := range cfg.Overrides {
				zone := awssdk.ToString(o.AvailabilityZone)
				if want := "subnet-" + zone; awssdk.ToString(o.SubnetId) != want {
					t.Errorf("override in %s uses subnet %s, want %s", zone, awssdk.ToString(o.SubnetId), want)
				}
				out.Insert(zone)
			}
		}
	}
	return sets.List(out), err
}

// nodeClassName names the world's EC2NodeClass.
const nodeClassName = "shifted-class"

func nodePoolIn(name, nodeClass string, zones ...string) *karpv1.NodePool {
	np := awstest.NodePool(nodeClass)
	np.Name = name
	if len(zones) > 0 {
		np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones}}
	}
	return np
}

// A shift away from us-west-2a steers launches to b and c (and a NodeClaim
// that needs a cannot launch), tells the NodePools that provision into a,
// and clears when the shift ends.
func TestZonalShiftSteersLaunchesAwayAndClears(t *testing.T) {
	a, b, c := zones[0], zones[1], zones[2]
	w := newWorld(t, true,
		nodePoolIn("default", nodeClassName),
		nodePoolIn("in-a-and-b", nodeClassName, a.Name, b.Name),
		nodePoolIn("in-c", nodeClassName, c.Name),
		nodePoolIn("other-class", "missing-class"),
	)
	all := []string{a.Name, b.Name, c.Name}
	onDemand := karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}}
	inA := karpv1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{a.Name}}

	// 1. No shift: the fleet offers every zone, and nothing is published.
	w.reconcileShifts(t)
	if got, err := w.launchZones(t, onDemand); err != nil || !cmp.Equal(got, all) {
		t.Fatalf("no shift: overrides in %v (error %v), want %v", got, err, all)
	}
	if got := w.recorder.take(); len(got) != 0 {
		t.Errorf("no shift: events %v, want none", got)
	}

	// 2. Shifted away from a: no override in a, a NodeClaim that needs a
	// cannot launch, and the NodePools that provision into a are told.
	shift := w.arc.StartZonalShift(w.arn, a.ID, time.Hour)
	w.reconcileShifts(t)
	if got, err := w.launchZones(t, onDemand); err != nil || !cmp.Equal(got, all[1:]) {
		t.Errorf("a shifted: overrides in %v (error %v), want %v", got, err, all[1:])
	}
	if got, err := w.launchZones(t, onDemand, inA); !cloudprovider.IsInsufficientCapacityError(err) || len(got) != 0 {
		t.Errorf("a shifted, NodeClaim needs a: overrides in %v, error %v; want no fleet and an insufficient capacity error", got, err)
	}
	active := fmt.Sprintf("Zonal shift detected: offerings in zone %s (%s) are unavailable for this NodePool", a.Name, a.ID)
	want := []recorded{
		{Object: "default", Type: corev1.EventTypeWarning, Reason: zonalshift.ReasonZonalShiftActive, Message: active},
		{Object: "in-a-and-b", Type: corev1.EventTypeWarning, Reason: zonalshift.ReasonZonalShiftActive, Message: active},
	}
	if diff := cmp.Diff(want, sortEvents(w.recorder.take())); diff != "" {
		t.Errorf("a shifted: events (-want,+got):\n%s", diff)
	}
	// The same shift read again publishes nothing more.
	w.reconcileShifts(t)
	if got := w.recorder.take(); len(got) != 0 {
		t.Errorf("a still shifted: events %v, want none", got)
	}

	// 3. The shift ends: a is offered again and the same NodePools are told.
	w.arc.CancelZonalShift(shift)
	w.reconcileShifts(t)
	if got, err := w.launchZones(t, onDemand); err != nil || !cmp.Equal(got, all) {
		t.Errorf("shift ended: overrides in %v (error %v), want %v", got, err, all)
	}
	cleared := fmt.Sprintf("Zonal shift cleared: offerings in zone %s (%s) are restored for this NodePool", a.Name, a.ID)
	want = []recorded{
		{Object: "default", Type: corev1.EventTypeNormal, Reason: zonalshift.ReasonZonalShiftCleared, Message: cleared},
		{Object: "in-a-and-b", Type: corev1.EventTypeNormal, Reason: zonalshift.ReasonZonalShiftCleared, Message: cleared},
	}
	if diff := cmp.Diff(want, sortEvents(w.recorder.take())); diff != "" {
		t.Errorf("shift ended: events (-want,+got):\n%s", diff)
	}
}

// Without --enable-zonal-shift ARC is never asked, no controller runs and
// a shift changes nothing.
func TestZonalShiftIgnoredWhenDisabled(t *testing.T) {
	w := newWorld(t, false)
	w.arc.StartZonalShift(w.arn, zones[0].ID, time.Hour)
	for _, c := range w.provider.Controllers {
		if c.Name() == "zonalshift" {
			t.Error("the zonalshift controller is registered without --enable-zonal-shift")
		}
	}
	onDemand := karpv1.NodeSelectorRequirementWithMinValues{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}}
	if got, err := w.launchZones(t, onDemand); err != nil || len(got) != len(zones) {
		t.Errorf("overrides in %v (error %v), want every zone", got, err)
	}
	if n := w.arc.Calls("GetManagedResource"); n != 0 {
		t.Errorf("%d GetManagedResource calls without --enable-zonal-shift, want 0", n)
	}
}

// sortEvents orders events by object: NodePools are listed in no set order.
func sortEvents(events []recorded) []recorded {
	slices.SortStableFunc(events, func(a, b recorded) int { return strings.Compare(a.Object, b.Object) })
	return events
}
