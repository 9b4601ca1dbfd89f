package awsprovisioning_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest/awsprocess"
)

// clusterEndpoint is the API server endpoint the fake EKS reports for the
// cluster; without --cluster-endpoint it is the one written into user data.
const clusterEndpoint = "https://0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com"

// awsCloud is awsprocess's account with the catalog's spot prices, the
// node role's instance profile and the cluster EKS describes.
func awsCloud(t *testing.T, k8s string) aws.Clients {
	t.Helper()
	clients := awsprocess.Account(t, k8s)
	if err := clients.EC2.(*fake.EC2).SeedCatalogSpotPrices(instancetypes.EC2, awstest.Zones, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	clients.IAM.(*fake.IAM).AddInstanceProfile("KarpenterNodeProfile", awstest.NodeRole)
	clients.EKS.(*fake.EKS).PutCluster(awstest.ClusterName, clusterEndpoint, "Y2x1c3Rlci1jYQ==")
	return clients
}

// TestControllerLaunchesOnAWS runs the whole controller process as
// --cloud-provider=aws builds it (core and AWS controllers on one manager)
// against the fakes: the EC2NodeClass turns Ready from discovery, and a
// pending pod becomes a launched NodeClaim backed by an EC2 instance whose
// user data joins the API server endpoint EKS reports.
func TestControllerLaunchesOnAWS(t *testing.T) {
	ctx := t.Context()
	clients := awsCloud(t, awsprocess.ServerVersion(t, env.Config))
	runAWSController(t, clients)

	scaleOut(t, test.MakeNodePool("default").NodeClassRef(awsv1.NodeClassReference("default")).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).Obj())

	awsprocess.Poll(t, "the EC2NodeClass Ready, with its drift hash", func() bool {
		got := &awsv1.EC2NodeClass{}
		return env.Client.Get(ctx, client.ObjectKey{Name: "default"}, got) == nil && got.StatusConditions().IsTrue(awsv1.ConditionTypeReady) &&
			got.Annotations[awsv1.AnnotationEC2NodeClassHash] == got.Hash()
	})
	launched := launchedNodeClaim(t, "")
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

// scaleOut creates the EC2NodeClass "default", nodePool and a pending
// 1-cpu pod for the controller to launch a node for.
func scaleOut(t *testing.T, nodePool *karpv1.NodePool) {
	t.Helper()
	ctx := t.Context()
	pod := test.MakePod("inflate").Namespace("default").Requests("cpu", "1", "memory", "1Gi").Obj()
	for _, obj := range []client.Object{awsprocess.NodeClass("default"), nodePool, pod} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
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
