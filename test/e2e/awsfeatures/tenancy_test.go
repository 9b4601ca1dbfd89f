package awsfeatures_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

// testDedicatedTenancy runs a pod on a NodePool that requires
// karpenter.k8s.aws/instance-tenancy: dedicated: its instance runs on
// dedicated hardware in the account, and its Node and NodeClaim carry the
// label.
func testDedicatedTenancy(t *testing.T, e *awsenv.Env) {
	const name = "e2e-dedicated"
	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name).Requirement(awsv1.LabelInstanceTenancy, corev1.NodeSelectorOpIn, string(ec2types.TenancyDedicated)))
	framework.Create(t, e.Client, framework.Deployment(name, name, name, 1, "500m"))
	pods := e.WaitAvailable(t, name, 1)

	node := e.Node(t, pods[0].Spec.NodeName)
	inst, ok := e.InstanceOf(node.Spec.ProviderID)
	if !ok {
		t.Fatalf("no simulated instance behind %s", node.Spec.ProviderID)
	}
	if inst.Placement == nil || inst.Placement.Tenancy != ec2types.TenancyDedicated {
		t.Errorf("instance %s placement %+v, want dedicated tenancy", aws.ToString(inst.InstanceId), inst.Placement)
	}
	if got := node.Labels[awsv1.LabelInstanceTenancy]; got != string(ec2types.TenancyDedicated) {
		t.Errorf("node %s label %s=%q, want dedicated", node.Name, awsv1.LabelInstanceTenancy, got)
	}
	claim := framework.NodeClaimOfNode(t, e.Client, node.Name)
	if got := claim.Labels[awsv1.LabelInstanceTenancy]; got != string(ec2types.TenancyDedicated) {
		t.Errorf("NodeClaim %s label %s=%q, want dedicated", claim.Name, awsv1.LabelInstanceTenancy, got)
	}
}
