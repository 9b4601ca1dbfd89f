package nodeclass_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/placementgroup"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/securitygroup"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/subnet"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/version"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

const (
	discoveryTag = "karpenter.sh/discovery"
	profile      = "KarpenterNodeInstanceProfile-test"
	role         = "KarpenterNodeRole-test"
	clusterName  = "test-cluster"
	region       = "us-west-2"
)

// world is an AWS account seen through the fakes: three subnets and two
// security groups tagged for discovery, two placement groups, the al2023@latest AMIs published
// for the API server's Kubernetes version, and an instance profile for the
// node role.
type world struct {
	ec2 *fake.EC2
	ssm *fake.SSM
	iam *fake.IAM
	// k8s is the API server's version, as the controller discovers it.
	k8s string
	// released is the ID of each al2023@latest parameter's current image.
	released   map[string]string
	providers  nodeclass.Providers
	controller *nodeclass.Controller
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{ec2: fake.NewEC2(), ssm: fake.NewSSM(), iam: fake.NewIAM()}
	w.ec2.SetImageClock(h.Clock)
	w.ec2.AddSubnets(
		fake.NewSubnet("subnet-a", "us-west-2a", "usw2-az1", 200, map[string]string{discoveryTag: "test"}),
		fake.NewSubnet("subnet-b", "us-west-2b", "usw2-az2", 300, map[string]string{discoveryTag: "test"}),
		fake.NewSubnet("subnet-c", "us-west-2c", "usw2-az3", 100, map[string]string{discoveryTag: "test"}),
		fake.NewSubnet("subnet-other", "us-west-2a", "usw2-az1", 900, map[string]string{discoveryTag: "other"}),
	)
	w.ec2.AddSecurityGroups(
		fake.NewSecurityGroup("sg-nodes", "nodes", map[string]string{discoveryTag: "test"}),
		fake.NewSecurityGroup("sg-cluster", "eks-cluster-sg", map[string]string{discoveryTag: "test"}),
		fake.NewSecurityGroup("sg-other", "other", nil),
	)
	w.ec2.AddPlacementGroups(
		fake.NewPlacementGroup("pg-0a1", "training", ec2types.PlacementStrategyCluster, 0),
		fake.NewPlacementGroup("pg-0b2", "kafka", ec2types.PlacementStrategyPartition, 3),
	)
	w.iam.AddInstanceProfile(profile, role)

	disco, err := discovery.NewDiscoveryClientForConfig(h.Env.Config)
	if err != nil {
		t.Fatal(err)
	}
	versions := version.NewProvider(disco, h.Clock)
	if w.k8s, err = versions.Get(t.Context()); err != nil {
		t.Fatal(err)
	}
	w.released = fake.PublishAMI(w.ec2, w.ssm, "al2023@latest", w.k8s, h.Clock.Now().Add(-24*time.Hour))
	w.providers = nodeclass.Providers{
		AMIs:                 ami.NewProvider(w.ec2, w.ssm, versions, h.Clock, ami.DefaultRefreshInterval),
		Subnets:              subnet.NewProvider(w.ec2, h.Clock, subnet.DefaultRefreshInterval),
		SecurityGroups:       securitygroup.NewProvider(w.ec2, h.Clock),
		CapacityReservations: capacityreservation.NewProvider(w.ec2, h.Clock),
		Version:              versions,
		InstanceProfiles:     instanceprofile.NewProvider(w.iam, h.Clock, clusterName, region),
		PlacementGroups:      placementgroup.NewProvider(w.ec2, h.Clock),
	}
	w.controller = nodeclass.NewController(h.Env.Client, h.Recorder, h.Clock, w.providers)
	return w
}

var nameSeq atomic.Int64

// nodeClass is a valid EC2NodeClass selecting the world's tagged subnets
// and groups, the al2023@latest AMIs and the instance profile. Each has its
// own name, so tests never see each other's objects or events.
func nodeClass() *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("nodeclass-%d", nameSeq.Add(1))},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			InstanceProfile:            ptr(profile),
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{discoveryTag: "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{discoveryTag: "test"}}},
		},
	}
	nc.SetGroupVersionKind(awsv1.SchemeGroupVersion.WithKind(awsv1.Kind))
	return nc
}

func ptr[T any](v T) *T { return &v }

func create(t *testing.T, nc *awsv1.EC2NodeClass) {
	t.Helper()
	if err := h.Env.Client.Create(t.Context(), nc); err != nil {
		t.Fatalf("creating %s: %v", nc.Name, err)
	}
	ctx := context.WithoutCancel(t.Context())
	t.Cleanup(func() { _ = h.Env.Client.Delete(ctx, nc) })
}

// reconcile runs one reconcile of the named NodeClass against the API
// server and returns its result and the NodeClass as stored afterwards.
func (w *world) reconcile(t *testing.T, name string) (reconcile.Result, *awsv1.EC2NodeClass, error) {
	t.Helper()
	res, err := reconcile.AsReconciler(h.Env.Client, w.controller).Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	got := &awsv1.EC2NodeClass{}
	if getErr := h.Env.Client.Get(t.Context(), types.NamespacedName{Name: name}, got); getErr != nil {
		t.Fatalf("getting %s: %v", name, getErr)
	}
	return res, got, err
}

// mustReconcile is reconcile that fails the test on a reconcile error.
func (w *world) mustReconcile(t *testing.T, name string) (reconcile.Result, *awsv1.EC2NodeClass) {
	t.Helper()
	res, got, err := w.reconcile(t, name)
	if err != nil {
		t.Fatalf("reconciling %s: %v", name, err)
	}
	return res, got
}

func condition(t *testing.T, nc *awsv1.EC2NodeClass, conditionType string) metav1.Condition {
	t.Helper()
	c := nc.StatusConditions().Get(conditionType)
	if c == nil {
		t.Fatalf("%s has no %s condition (conditions %+v)", nc.Name, conditionType, nc.Status.Conditions)
	}
	return *c
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
