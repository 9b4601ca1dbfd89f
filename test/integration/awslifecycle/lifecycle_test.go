package awslifecycle_test

import (
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest/awsprocess"
)

var env *environment.Environment

func TestMain(m *testing.M) { environment.Main(m, &env) }

// The life of an EC2NodeClass naming a role, in the whole process: its own
// instance profile is created and launched with, the instance of its
// registered NodeClaim is tagged, and deleting it waits for the NodeClaim,
// then deletes its launch templates and instance profile.
func TestEC2NodeClassLifecycleOnAWS(t *testing.T) {
	ctx := t.Context()
	// User data joins a fixed endpoint, so EKS needs to know no cluster.
	clients := awsprocess.Account(t, awsprocess.ServerVersion(t, env.Config))
	awsprocess.Run(t, env.Config, clients, "--cluster-endpoint=https://test-cluster.example")
	e, iam := clients.EC2.(*fake.EC2), clients.IAM.(*fake.IAM)
	e.SetTerminationDelay(0)
	nodeClass := awsprocess.NodeClass("lifecycle")
	nodePool := test.MakeNodePool("default").NodeClassRef(awsv1.NodeClassReference(nodeClass.Name)).
		ConsolidateAfter(karpv1.MustParseNillableDuration("Never")).Obj()
	nodeClaim := test.MakeNodeClaim("lifecycle-a").NodePool("default").NodeClassRef(awsv1.NodeClassReference(nodeClass.Name)).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large").Obj()
	for _, obj := range []client.Object{nodeClass, nodePool} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}

	// 1. Ready with its own instance profile, and held by the finalizer.
	profile := instanceprofile.Name(awstest.ClusterName, awstest.Region, nodeClass.Name)
	awsprocess.Poll(t, "the EC2NodeClass Ready with its own instance profile and finalizer", func() bool {
		got := &awsv1.EC2NodeClass{}
		return env.Client.Get(ctx, client.ObjectKeyFromObject(nodeClass), got) == nil && got.StatusConditions().IsTrue(awsv1.ConditionTypeReady) &&
			got.Status.InstanceProfile == profile && controllerutil.ContainsFinalizer(got, awsv1.TerminationFinalizer)
	})
	if p, ok := iam.InstanceProfile(profile); !ok || len(p.Roles) != 1 || awssdk.ToString(p.Roles[0].RoleName) != nodeClass.Spec.Role {
		t.Fatalf("IAM profile %s: exists %v, roles %+v; want the node role attached", profile, ok, p.Roles)
	}

	// 2. A NodeClaim launches with it; its Node registers; the instance is tagged.
	if err := env.Client.Create(ctx, nodeClaim); err != nil {
		t.Fatal(err)
	}
	awsprocess.Poll(t, "the NodeClaim launched", func() bool {
		got := &karpv1.NodeClaim{}
		if env.Client.Get(ctx, client.ObjectKeyFromObject(nodeClaim), got) != nil || got.Status.ProviderID == "" {
			return false
		}
		nodeClaim = got
		return true
	})
	if got := nodeClaim.Annotations[awsv1.AnnotationInstanceProfile]; got != profile {
		t.Errorf("NodeClaim launched with instance profile %q, want %q", got, profile)
	}
	node := test.MakeNode("ip-10-0-0-1.us-west-2.compute.internal").ProviderID(nodeClaim.Status.ProviderID).NotReady().Obj()
	if err := env.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	id, err := instance.ParseProviderID(nodeClaim.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	awsprocess.Poll(t, "the instance tagged with its Node and NodeClaim names", func() bool {
		tags := instanceTags(t, e, id)
		return tags[awsv1.TagName] == node.Name && tags[awsv1.TagNodeClaim] == nodeClaim.Name
	})

	// 3. Deleting the class waits for the NodeClaim.
	if err := env.Client.Delete(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	awsprocess.Poll(t, "the wait event", func() bool {
		for _, reason := range eventReasons(t, awsv1.Kind, nodeClass.Name) {
			if reason == "WaitingOnNodeClaimTermination" {
				return true
			}
		}
		return false
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nodeClass), &awsv1.EC2NodeClass{}); err != nil {
		t.Fatalf("the EC2NodeClass is gone while its NodeClaim exists: %v", err)
	}
	if !hasLaunchTemplates(t, e, nodeClass.Name) {
		t.Fatal("launch templates deleted while the NodeClaim exists")
	}

	// 4. Once the NodeClaim is gone, so are the class, its launch templates and profile.
	if err := env.Client.Delete(ctx, nodeClaim); err != nil {
		t.Fatal(err)
	}
	awsprocess.Poll(t, "the EC2NodeClass deleted after its NodeClaim", func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(nodeClass), &awsv1.EC2NodeClass{}))
	})
	if hasLaunchTemplates(t, e, nodeClass.Name) {
		t.Error("the class's launch templates are left")
	}
	if _, ok := iam.InstanceProfile(profile); ok {
		t.Errorf("instance profile %s is left", profile)
	}
}

func instanceTags(t *testing.T, e *fake.EC2, id string) map[string]string {
	t.Helper()
	for _, inst := range e.Instances() {
		if awssdk.ToString(inst.InstanceId) == id {
			out := map[string]string{}
			for _, tag := range inst.Tags {
				out[awssdk.ToString(tag.Key)] = awssdk.ToString(tag.Value)
			}
			return out
		}
	}
	return nil
}

func hasLaunchTemplates(t *testing.T, e *fake.EC2, nodeClass string) bool {
	t.Helper()
	out, err := e.DescribeLaunchTemplates(t.Context(), &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, lt := range out.LaunchTemplates {
		for _, tag := range lt.Tags {
			if awssdk.ToString(tag.Key) == awsv1.TagNodeClass && awssdk.ToString(tag.Value) == nodeClass {
				return true
			}
		}
	}
	return false
}

func eventReasons(t *testing.T, kind, name string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := env.Client.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range list.Items {
		if ev.Regarding.Kind == kind && ev.Regarding.Name == name {
			out = append(out, ev.Reason)
		}
	}
	return out
}
