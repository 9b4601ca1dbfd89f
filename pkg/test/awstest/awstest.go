// Package awstest builds the AWS provider over the stateful AWS fakes for
// tests: the embedded EC2 catalog served in three zones by the EC2 and
// Pricing fakes (an account of fake.NewAccount), the provider as
// aws.NewProvider assembles it for the process (the shipped providers,
// caches and controllers), and EC2NodeClasses with a resolved status on a
// real API server. It is a test kit: product code never imports it (a
// depguard rule in .golangci.yml).
package awstest

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
	awsoptions "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/options"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/pricing"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// The cluster and region of every World, and the IAM role of its
// EC2NodeClasses.
const (
	ClusterName = "test-cluster"
	Region      = "us-west-2"
	NodeRole    = "KarpenterNodeRole-test-cluster"
)

// Zones are where the catalog's types are offered and the EC2NodeClasses
// have a subnet: us-west-2a, b and c (usw2-az1, 2 and 3).
var Zones = fake.RegionZones(Region)

// World is the AWS provider as aws.NewProvider builds it for the process,
// over stateful fakes of EC2, Pricing, SSM and IAM that serve the embedded
// EC2 catalog in three zones.
type World struct {
	EC2         *fake.EC2
	Prices      *pricing.Provider
	Unavailable *cache.UnavailableOfferings
	Types       *instancetype.Provider
	Provider    *aws.CloudProvider
	// Controllers are the AWS controllers the process would register; no
	// test registers them unless it means to.
	Controllers []aws.Controller

	clients aws.Clients
	deps    aws.Dependencies
}

// NewWorld seeds an account (fake.NewAccount) with the embedded catalog,
// its spot and on-demand prices and nothing else, and builds the
// provider with aws.NewProvider, reading EC2NodeClasses and the cluster's
// facts from env's API server. The cluster endpoint and CA are
// Options' (as with --cluster-endpoint and --cluster-ca-bundle), so no EKS
// is asked.
//
// env may be nil for a test that only reads what the provider answers from
// the fakes alone (instance types, prices): the provider then has no
// client, finds no kube-dns or service CIDR, and never reaches its
// discovery client's unreachable host.
func NewWorld(t testing.TB, env *environment.Environment) *World {
	t.Helper()
	clk := clock.RealClock{}
	account, err := fake.NewAccount(fake.AccountOptions{Region: Region, Clock: clk, SpotPrices: true})
	if err != nil {
		t.Fatal(err)
	}
	w := &World{
		EC2: account.EC2,
		// No EKS: the cluster endpoint and CA are the options'.
		clients: aws.Clients{Region: Region, EC2: account.EC2, Pricing: account.Pricing, SSM: account.SSM, IAM: account.IAM},
		deps: aws.Dependencies{
			Clock:            clk,
			Recorder:         &events.FakeRecorder{}, // no channel: events are dropped
			Options:          options(),
			ReservedCapacity: true,
			Registerer:       prometheus.NewRegistry(),
			APIReader:        noCluster{},
			RestConfig:       &rest.Config{Host: "https://unreachable.invalid"},
		},
	}
	if env != nil {
		w.deps.KubeClient, w.deps.APIReader, w.deps.RestConfig = env.Client, env.Client, env.Config
	}
	p := w.build(t)
	w.Prices, w.Unavailable, w.Types, w.Provider, w.Controllers = p.Prices, p.UnavailableOfferings, p.InstanceTypes, p.CloudProvider, p.Controllers
	// EC2 fills fleets at the published prices, the ones karp reads.
	w.EC2.SetPricer(func(pool fake.CapacityPool) (float64, bool) {
		if pool.CapacityType == karpv1.CapacityTypeSpot {
			return w.Prices.SpotPrice(pool.InstanceType, pool.Zone)
		}
		return w.Prices.OnDemandPrice(pool.InstanceType)
	})
	return w
}

// Restart builds a second provider on the same fakes, as a new process
// would: nothing remembered in memory.
func (w *World) Restart(t testing.TB) *aws.CloudProvider {
	t.Helper()
	return w.build(t).CloudProvider
}

// build runs the shipped constructor over the World's fakes.
func (w *World) build(t testing.TB) *aws.Provider {
	t.Helper()
	p, err := aws.NewProvider(context.Background(), w.deps, w.clients)
	if err != nil {
		t.Fatalf("building the AWS provider on the fakes: %v", err)
	}
	return p
}

// options are the settings of a World's provider: the flags' defaults,
// the cluster name, and the endpoint and CA nodes join with.
func options() *awsoptions.Options {
	return &awsoptions.Options{
		ClusterName:             ClusterName,
		ClusterEndpoint:         "https://test-cluster.example",
		ClusterCABundle:         base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n")),
		VMMemoryOverheadPercent: awsoptions.DefaultVMMemoryOverheadPercent,
		AMIRefreshInterval:      awsoptions.DefaultRefreshInterval,
		SubnetRefreshInterval:   awsoptions.DefaultRefreshInterval,
		SSMAliasCacheTTL:        awsoptions.DefaultSSMAliasCacheTTL,
	}
}

// noCluster is the API reader of a World without an API server: it finds
// nothing, so the cluster facts are the options' alone.
type noCluster struct{}

func (noCluster) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: fmt.Sprintf("%T", obj)}, key.Name)
}

func (noCluster) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// StatusAMIs are an al2023@latest class's resolved AMIs.
var StatusAMIs = []awsv1.AMI{
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

// NewNodeClass returns an al2023@latest EC2NodeClass with a unique name,
// a subnet per zone and one security group; edit adjusts it.
func NewNodeClass(edit func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "nc-" + string(uuid.NewUUID())[:8]},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": ClusterName}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": ClusterName}}},
			Role:                       NodeRole,
			Tags:                       map[string]string{"team": "platform"},
		},
	}
	if edit != nil {
		edit(nc)
	}
	return nc
}

// CreateNodeClass creates the EC2NodeClass with a resolved status: subnets
// in every zone, a security group, the AMIs, an instance profile and every
// condition True (ready false leaves SubnetsReady False).
func CreateNodeClass(t testing.TB, kubeClient client.Client, nc *awsv1.EC2NodeClass, ready bool) *awsv1.EC2NodeClass {
	t.Helper()
	ctx := context.Background()
	if err := kubeClient.Create(ctx, nc); err != nil {
		t.Fatalf("creating EC2NodeClass %s: %v", nc.Name, err)
	}
	t.Cleanup(func() { _ = kubeClient.Delete(context.Background(), nc) })
	for i, z := range Zones {
		nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: fmt.Sprintf("subnet-%d", i+1), Zone: z.Name, ZoneID: z.ID})
	}
	nc.Status.SecurityGroups = []awsv1.SecurityGroup{{ID: "sg-test1", Name: "nodes"}}
	nc.Status.AMIs = StatusAMIs
	nc.Status.InstanceProfile = "test-profile"
	conditions := nc.StatusConditions()
	for _, c := range []string{awsv1.ConditionTypeAMIsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeInstanceProfileReady,
		awsv1.ConditionTypeCapacityReservationsReady, awsv1.ConditionTypeValidationSucceeded, awsv1.ConditionTypePlacementGroupReady} {
		conditions.SetTrue(c)
	}
	if ready {
		conditions.SetTrue(awsv1.ConditionTypeSubnetsReady)
	} else {
		conditions.SetFalse(awsv1.ConditionTypeSubnetsReady, "SubnetsNotFound", "SubnetSelector did not match any Subnets")
	}
	if err := kubeClient.Status().Update(ctx, nc); err != nil {
		t.Fatalf("setting EC2NodeClass %s status: %v", nc.Name, err)
	}
	return nc
}

// NewNodeClaim returns a NodeClaim of the default NodePool with a fresh
// UID and a unique name pointing at the EC2NodeClass.
func NewNodeClaim(name, nodeClass string) *karpv1.NodeClaim {
	nc := test.MakeNodeClaim(name + "-" + string(uuid.NewUUID())[:6]).NodePool("default").NodeClassRef(awsv1.NodeClassReference(nodeClass)).Obj()
	nc.UID = uuid.NewUUID()
	return nc
}

// NodePool returns the default NodePool on the EC2NodeClass.
func NodePool(nodeClass string) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = awsv1.NodeClassReference(nodeClass)
	return np
}
