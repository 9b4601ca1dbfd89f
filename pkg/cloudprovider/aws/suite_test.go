package aws_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/fake"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/pricing"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// env is a real etcd + kube-apiserver holding the EC2NodeClasses.
var env *environment.Environment

const (
	clusterName = "test-cluster"
	region      = "us-west-2"
)

var zones = []fake.OfferingZone{
	{Name: "us-west-2a", ID: "usw2-az1"},
	{Name: "us-west-2b", ID: "usw2-az2"},
	{Name: "us-west-2c", ID: "usw2-az3"},
}

func TestMain(m *testing.M) {
	log.SetLogger(logr.Discard())
	var err error
	env, err = environment.Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// world is the AWS provider wired to stateful fakes of EC2 and Pricing
// that serve the embedded EC2 catalog in three zones.
type world struct {
	ec2         *fake.EC2
	prices      *pricing.Provider
	unavailable *cache.UnavailableOfferings
	types       *instancetype.Provider
	provider    *aws.CloudProvider
}

func newWorld(t testing.TB) *world {
	t.Helper()
	ctx := context.Background()
	clk := clock.RealClock{}
	w := &world{ec2: fake.NewEC2()}
	infos, err := fake.CatalogInstanceTypes(instancetypes.EC2)
	if err != nil {
		t.Fatal(err)
	}
	w.ec2.SeedCatalog(infos, zones...)
	if err := w.ec2.SeedCatalogSpotPrices(instancetypes.EC2, zones, clk.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	pricingAPI := fake.NewPricing()
	if err := pricingAPI.SeedCatalogOnDemandPrices(region, instancetypes.EC2); err != nil {
		t.Fatal(err)
	}
	if w.prices, err = pricing.NewProvider(w.ec2, pricingAPI, region, false, clk); err != nil {
		t.Fatal(err)
	}
	if err := w.prices.Update(ctx); err != nil {
		t.Fatal(err)
	}
	// EC2 fills fleets at the published prices, the ones karp reads.
	w.ec2.SetPricer(func(pool fake.CapacityPool) (float64, bool) {
		if pool.CapacityType == karpv1.CapacityTypeSpot {
			return w.prices.SpotPrice(pool.InstanceType, pool.Zone)
		}
		return w.prices.OnDemandPrice(pool.InstanceType)
	})
	w.unavailable = cache.NewUnavailableOfferings(clk)
	w.types = instancetype.NewProvider(w.ec2, w.prices, w.unavailable, nil,
		instancetype.Options{Region: region, VMMemoryOverheadPercent: 0.075}, clk)
	if err := w.types.Update(ctx); err != nil {
		t.Fatal(err)
	}
	lts := launchtemplate.NewProvider(w.ec2, clk, launchtemplate.Options{
		ClusterName:     clusterName,
		ClusterEndpoint: "https://test-cluster.example",
		CABundle:        base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n")),
		ClusterCIDR:     "10.100.0.0/16",
		ClusterDNSIP:    "10.100.0.10",
	})
	instances := instance.NewProvider(w.ec2, clk, clusterName, w.unavailable)
	w.provider = aws.New(env.Client, clk, clusterName, w.types, instances, lts, w.unavailable)
	return w
}

// restart builds a second provider on the same fakes, as a new process
// would: nothing remembered in memory.
func (w *world) restart(t testing.TB) *aws.CloudProvider {
	t.Helper()
	clk := clock.RealClock{}
	lts := launchtemplate.NewProvider(w.ec2, clk, launchtemplate.Options{ClusterName: clusterName, ClusterEndpoint: "https://test-cluster.example", ClusterCIDR: "10.100.0.0/16"})
	return aws.New(env.Client, clk, clusterName, w.types, instance.NewProvider(w.ec2, clk, clusterName, w.unavailable), lts, w.unavailable)
}

// statusAMIs are an al2023@latest class's resolved AMIs.
var statusAMIs = []awsv1.AMI{
	{ID: "ami-amd64", Name: "al2023-amd64-standard", Requirements: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	}},
	{ID: "ami-arm64", Name: "al2023-arm64-standard", Requirements: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}},
		{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	}},
	{ID: "ami-nvidia", Name: "al2023-amd64-nvidia", Requirements: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists},
	}},
	{ID: "ami-neuron", Name: "al2023-amd64-neuron", Requirements: []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists},
	}},
}

// newNodeClass returns an al2023@latest EC2NodeClass with a unique name,
// a subnet per zone and one security group; edit adjusts it.
func newNodeClass(edit func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "nc-" + string(uuid.NewUUID())[:8]},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": clusterName}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": clusterName}}},
			Role:                       "KarpenterNodeRole-test-cluster",
			Tags:                       map[string]string{"team": "platform"},
		},
	}
	if edit != nil {
		edit(nc)
	}
	return nc
}

// createNodeClass creates the EC2NodeClass with a resolved status: subnets
// in every zone, a security group, the AMIs, an instance profile and every
// condition True (ready false leaves SubnetsReady False).
func createNodeClass(t testing.TB, nc *awsv1.EC2NodeClass, ready bool) *awsv1.EC2NodeClass {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, nc); err != nil {
		t.Fatalf("creating EC2NodeClass %s: %v", nc.Name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), nc) })
	for i, z := range zones {
		nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: fmt.Sprintf("subnet-%d", i+1), Zone: z.Name, ZoneID: z.ID})
	}
	nc.Status.SecurityGroups = []awsv1.SecurityGroup{{ID: "sg-test1", Name: "nodes"}}
	nc.Status.AMIs = statusAMIs
	nc.Status.InstanceProfile = "test-profile"
	conditions := nc.StatusConditions()
	for _, c := range []string{awsv1.ConditionTypeAMIsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeInstanceProfileReady,
		awsv1.ConditionTypeCapacityReservationsReady, awsv1.ConditionTypeValidationSucceeded} {
		conditions.SetTrue(c)
	}
	if ready {
		conditions.SetTrue(awsv1.ConditionTypeSubnetsReady)
	} else {
		conditions.SetFalse(awsv1.ConditionTypeSubnetsReady, "SubnetsNotFound", "SubnetSelector did not match any Subnets")
	}
	if err := env.Client.Status().Update(ctx, nc); err != nil {
		t.Fatalf("setting EC2NodeClass %s status: %v", nc.Name, err)
	}
	return nc
}

// newNodeClaim returns a NodeClaim of the default NodePool with a fresh
// UID and a unique name pointing at the EC2NodeClass.
func newNodeClaim(name, nodeClass string) *karpv1.NodeClaim {
	nc := test.MakeNodeClaim(name + "-" + string(uuid.NewUUID())[:6]).NodePool("default").NodeClassRef(awsv1.NodeClassReference(nodeClass)).Obj()
	nc.UID = uuid.NewUUID()
	return nc
}

// nodePool returns the default NodePool on the EC2NodeClass.
func nodePool(nodeClass string) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = awsv1.NodeClassReference(nodeClass)
	return np
}
