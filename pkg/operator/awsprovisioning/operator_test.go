package awsprovisioning_test

import (
	"context"
	"encoding/base64"
	"flag"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami/amitest"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/awstest"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/fake"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/version"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
	"github.com/karp-autoscaler/karp/pkg/controllers"
	"github.com/karp-autoscaler/karp/pkg/operator"
	"github.com/karp-autoscaler/karp/pkg/operator/options"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// clusterEndpoint is the API server endpoint the fake EKS reports for the
// cluster; without --cluster-endpoint it is the one written into user data.
const clusterEndpoint = "https://0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com"

// awsCloud is an AWS account as the fakes hold it: the catalog in three
// zones, a tagged subnet per zone and security group, the AL2023 AMIs
// behind their SSM parameters, the node role's instance profile and the
// catalog's prices.
func awsCloud(t *testing.T, k8s string) operator.AWSClients {
	t.Helper()
	e := fake.NewEC2()
	infos, err := fake.CatalogInstanceTypes(instancetypes.EC2)
	if err != nil {
		t.Fatal(err)
	}
	e.SeedCatalog(infos, awstest.Zones...)
	if err := e.SeedCatalogSpotPrices(instancetypes.EC2, awstest.Zones, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	discovery := map[string]string{"karpenter.sh/discovery": awstest.ClusterName}
	for i, z := range awstest.Zones {
		e.AddSubnets(fake.NewSubnet("subnet-"+string(rune('a'+i)), z.Name, z.ID, 200, discovery))
	}
	e.AddSecurityGroups(fake.NewSecurityGroup("sg-nodes", "nodes", discovery))
	ssm := fake.NewSSM()
	amitest.Publish(e, ssm, "al2023@latest", k8s, time.Now().Add(-24*time.Hour))
	iam := fake.NewIAM()
	iam.AddRole("KarpenterNodeRole-test-cluster")
	iam.AddInstanceProfile("KarpenterNodeProfile", "KarpenterNodeRole-test-cluster")
	prices := fake.NewPricing()
	if err := prices.SeedCatalogOnDemandPrices(awstest.Region, instancetypes.EC2); err != nil {
		t.Fatal(err)
	}
	eks := fake.NewEKS()
	eks.PutCluster(awstest.ClusterName, clusterEndpoint, "Y2x1c3Rlci1jYQ==")
	return operator.AWSClients{Region: awstest.Region, EC2: e, SSM: ssm, IAM: iam, Pricing: prices, EKS: eks}
}

// TestControllerLaunchesOnAWS runs the whole controller process as
// --cloud-provider=aws builds it (core and AWS controllers on one manager)
// against the fakes: the EC2NodeClass turns Ready from discovery, and a
// pending pod becomes a launched NodeClaim backed by an EC2 instance whose
// user data joins the API server endpoint EKS reports.
func TestControllerLaunchesOnAWS(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	opts, err := options.Parse(flag.NewFlagSet("karp", flag.ContinueOnError), []string{
		"--cloud-provider=aws", "--cluster-name=" + awstest.ClusterName, "--disable-leader-election",
		"--metrics-port=0", "--health-probe-port=0", "--batch-idle-duration=200ms", "--batch-max-duration=2s",
	})
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	info, err := disco.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	k8s, err := version.Parse(info)
	if err != nil {
		t.Fatal(err)
	}
	clients := awsCloud(t, k8s)

	op, err := operator.New(ctx, env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	provider, err := operator.NewAWSProvider(ctx, opts, op, env.Config, clients)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Register(ctx, append(controllers.NewControllers(op.Deps(provider.CloudProvider)), provider.Controllers...)...); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- op.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("operator stopped: %v", err)
		}
		cleanUp(t)
	})

	nodeClass := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": awstest.ClusterName}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": awstest.ClusterName}}},
			Role:                       "KarpenterNodeRole-test-cluster",
		},
	}
	nodePool := test.MakeNodePool("default").NodeClassRef(awsv1.NodeClassReference("default")).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).Obj()
	pod := test.MakePod("inflate").Namespace("default").Requests("cpu", "1", "memory", "1Gi").Obj()
	for _, obj := range []client.Object{nodeClass, nodePool, pod} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}

	poll(t, "the EC2NodeClass Ready, with its drift hash", func() bool {
		got := &awsv1.EC2NodeClass{}
		return env.Client.Get(ctx, client.ObjectKey{Name: "default"}, got) == nil && got.StatusConditions().IsTrue(awsv1.ConditionTypeReady) &&
			got.Annotations[awsv1.AnnotationEC2NodeClassHash] == got.Hash()
	})
	var launched *karpv1.NodeClaim
	poll(t, "a launched NodeClaim", func() bool {
		list := &karpv1.NodeClaimList{}
		if env.Client.List(ctx, list) != nil {
			return false
		}
		for i := range list.Items {
			if nc := &list.Items[i]; nc.StatusConditions().IsTrue(karpv1.ConditionTypeLaunched) {
				launched = nc
				return true
			}
		}
		return false
	})
	if !strings.HasPrefix(launched.Status.ProviderID, "aws:///") || launched.Labels[corev1.LabelInstanceTypeStable] == "" {
		t.Errorf("NodeClaim %s launched as %q with labels %v", launched.Name, launched.Status.ProviderID, launched.Labels)
	}
	e := clients.EC2.(*fake.EC2)
	instances := e.Instances()
	if len(instances) != 1 || !strings.HasSuffix(launched.Status.ProviderID, awssdk.ToString(instances[0].InstanceId)) {
		t.Fatalf("EC2 holds %d instances for NodeClaim %s (%s)", len(instances), launched.Name, launched.Status.ProviderID)
	}
	if aws := e.CreateFleetInputs(); len(aws) != 1 || string(aws[0].TargetCapacitySpecification.DefaultTargetCapacityType) != karpv1.CapacityTypeOnDemand {
		t.Errorf("%d CreateFleet calls, want one on-demand fleet", len(aws))
	} else if userData := launchedUserData(t, e, aws[0]); !strings.Contains(userData, clusterEndpoint) {
		t.Errorf("user data does not join the endpoint EKS reports (%s):\n%s", clusterEndpoint, userData)
	}
	if n := clients.EKS.(*fake.EKS).Calls("DescribeCluster"); n != 1 {
		t.Errorf("%d eks:DescribeCluster calls at start, want 1", n)
	}
}

// launchedUserData is the decoded user data of the fleet's launch template.
func launchedUserData(t *testing.T, e *fake.EC2, fleet *ec2.CreateFleetInput) string {
	t.Helper()
	if len(fleet.LaunchTemplateConfigs) == 0 || fleet.LaunchTemplateConfigs[0].LaunchTemplateSpecification == nil {
		t.Fatal("the fleet names no launch template")
	}
	name := awssdk.ToString(fleet.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName)
	data, ok := e.LaunchTemplateData(name)
	if !ok {
		t.Fatalf("launch template %q does not exist", name)
	}
	raw, err := base64.StdEncoding.DecodeString(awssdk.ToString(data.UserData))
	if err != nil {
		t.Fatalf("launch template %q user data: %v", name, err)
	}
	return string(raw)
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// cleanUp deletes what the controller test made, finalizers released, so
// the suites after it start from an empty cluster.
func cleanUp(t *testing.T) {
	ctx := context.WithoutCancel(t.Context()) // it runs as a cleanup, after t.Context() ended
	release := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	for _, list := range []client.ObjectList{&karpv1.NodeClaimList{}, &corev1.NodeList{}, &karpv1.NodePoolList{}, &awsv1.EC2NodeClassList{}, &corev1.PodList{}} {
		if err := env.Client.List(ctx, list); err != nil {
			t.Errorf("listing for clean-up: %v", err)
			continue
		}
		items, err := metaItems(list)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, obj := range items {
			_ = env.Client.Patch(ctx, obj, release)
			grace := client.GracePeriodSeconds(0)
			if err := client.IgnoreNotFound(env.Client.Delete(ctx, obj, grace)); err != nil {
				t.Errorf("deleting %s: %v", obj.GetName(), err)
			}
		}
	}
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		if obj, ok := o.(client.Object); ok {
			out = append(out, obj)
		}
	}
	return out, nil
}
