package aws_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

// TestEC2NodeClassProfileTagsAndFinalizer follows an EC2NodeClass naming
// the node role through the simulated IAM and EC2: karp creates its
// instance profile (the role attached, under /karpenter/), the instance of
// each registered node is tagged with the node's and NodeClaim's names,
// and deleting the class waits for its NodeClaims, then deletes its launch
// templates and instance profile.
func TestEC2NodeClassProfileTagsAndFinalizer(t *testing.T) {
	const name = "e2e-iprof"
	e := awsenv.Start(t)
	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name))

	// 1. The class's own instance profile, with the role.
	profile := instanceprofile.Name(e.Sim.ClusterName(), e.Sim.Region(), name)
	nc := &awsv1.EC2NodeClass{}
	if err := e.Client.Get(t.Context(), client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	if nc.Status.InstanceProfile != profile {
		t.Errorf("status.instanceProfile %q, want %q", nc.Status.InstanceProfile, profile)
	}
	got, ok := e.Sim.IAM.InstanceProfile(profile)
	if !ok || len(got.Roles) != 1 || aws.ToString(got.Roles[0].RoleName) != e.Sim.RoleName() ||
		!strings.HasPrefix(aws.ToString(got.Path), "/karpenter/"+e.Sim.Region()+"/"+e.Sim.ClusterName()+"/") {
		t.Fatalf("IAM profile %s: exists %v, path %q, roles %+v; want the node role under /karpenter/<region>/<cluster>/",
			profile, ok, aws.ToString(got.Path), got.Roles)
	}

	// 2. A node, its instance tagged once it registered.
	framework.Create(t, e.Client, framework.Deployment(name, name, name, 1, "500m"))
	e.WaitAvailable(t, name, 1)
	framework.Eventually(t, awsenv.ScaleTimeout, func(ctx context.Context) (bool, string) {
		nodes := poolNodes(ctx, e.Client, name)
		if len(nodes) == 0 {
			return false, "no node yet"
		}
		for _, node := range nodes {
			inst, ok := e.InstanceOf(node.Spec.ProviderID)
			if !ok || tag(inst, awsv1.TagName) != node.Name || tag(inst, awsv1.TagNodeClaim) == "" {
				return false, fmt.Sprintf("instance of %s: Name %q, nodeclaim %q", node.Name, tag(inst, awsv1.TagName), tag(inst, awsv1.TagNodeClaim))
			}
		}
		return true, ""
	})

	// 3. Deleting the class waits for its NodeClaims.
	if err := e.Client.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, awsenv.ScaleTimeout, func(ctx context.Context) (bool, string) {
		var events eventsv1.EventList
		if err := e.Client.List(ctx, &events); err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(events.Items, func(ev eventsv1.Event) bool {
			return ev.Regarding.Kind == awsv1.Kind && ev.Regarding.Name == name && ev.Reason == "WaitingOnNodeClaimTermination"
		}), "no WaitingOnNodeClaimTermination event"
	})
	if err := e.Client.Get(t.Context(), client.ObjectKey{Name: name}, &awsv1.EC2NodeClass{}); err != nil {
		t.Fatalf("the class is gone while its NodeClaims exist: %v", err)
	}
	if _, ok := e.Sim.IAM.InstanceProfile(profile); !ok {
		t.Fatal("the instance profile was deleted while NodeClaims use it")
	}

	// 4. Once they are gone, so are the class, its launch templates and profile.
	if err := e.Client.DeleteAllOf(t.Context(), &karpv1.NodeClaim{}, client.MatchingLabels{karpv1.NodePoolLabelKey: name}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, awsenv.CleanupTimeout, func(ctx context.Context) (bool, string) {
		err := e.Client.Get(ctx, client.ObjectKey{Name: name}, &awsv1.EC2NodeClass{})
		return apierrors.IsNotFound(err), fmt.Sprintf("EC2NodeClass %s: %v", name, err)
	})
	if hasLaunchTemplates(t, e, name) {
		t.Error("launch templates of the deleted class are left")
	}
	if _, ok := e.Sim.IAM.InstanceProfile(profile); ok {
		t.Errorf("instance profile %s of the deleted class is left", profile)
	}
}

// hasLaunchTemplates reports whether the simulated EC2 holds launch
// templates tagged with the EC2NodeClass.
func hasLaunchTemplates(t *testing.T, e *awsenv.Env, nodeClass string) bool {
	t.Helper()
	out, err := e.Sim.EC2.DescribeLaunchTemplates(t.Context(), &ec2.DescribeLaunchTemplatesInput{
		Filters: []ec2types.Filter{{Name: aws.String("tag:" + awsv1.TagNodeClass), Values: []string{nodeClass}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.LaunchTemplates) > 0
}
