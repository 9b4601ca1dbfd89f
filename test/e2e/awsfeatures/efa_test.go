package awsfeatures_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

// testEFA runs two pods that each request one vpc.amazonaws.com/efa on a
// NodePool and EC2NodeClass as a user writes them (no networkInterfaces):
// karp launches EFA-capable types with every EFA interface the type has,
// one per network card (the instances in the account show them), the
// nodes advertise the devices, and the pods run.
func testEFA(t *testing.T, e *awsenv.Env) {
	const name = "e2e-efa"
	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name))
	d := framework.Deployment(name, name, name, 2, "1")
	efa := corev1.ResourceList{awsv1.ResourceEFA: resource.MustParse("1")}
	container := &d.Spec.Template.Spec.Containers[0]
	container.Resources.Requests[awsv1.ResourceEFA] = efa[awsv1.ResourceEFA]
	container.Resources.Limits = efa
	framework.Create(t, e.Client, d)
	pods := e.WaitAvailable(t, name, 2)

	perNode := map[string]int64{}
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
	}
	for nodeName, podsOn := range perNode {
		node := e.Node(t, nodeName)
		inst, ok := e.InstanceOf(node.Spec.ProviderID)
		if !ok {
			t.Fatalf("no simulated instance behind %s", node.Spec.ProviderID)
		}
		// 1. The type's EFA interfaces, as EC2 describes the type.
		types, err := e.Sim.EC2.DescribeInstanceTypes(t.Context(), &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{inst.InstanceType}})
		if err != nil || len(types.InstanceTypes) != 1 {
			t.Fatalf("describing %s: %v", inst.InstanceType, err)
		}
		var maxEFA int32
		if ni := types.InstanceTypes[0].NetworkInfo; ni != nil && ni.EfaInfo != nil {
			maxEFA = aws.ToInt32(ni.EfaInfo.MaximumEfaInterfaces)
		}
		if maxEFA == 0 {
			t.Errorf("node %s: %s has no EFA, yet its pods requested one", nodeName, inst.InstanceType)
			continue
		}
		// 2. The instance has all of them, each on its own network card.
		var cards []int32
		for _, ni := range inst.NetworkInterfaces {
			if aws.ToString(ni.InterfaceType) == string(ec2types.NetworkInterfaceTypeEfa) && ni.Attachment != nil {
				cards = append(cards, aws.ToInt32(ni.Attachment.NetworkCardIndex))
			}
		}
		slices.Sort(cards)
		if len(cards) != int(maxEFA) || len(slices.Compact(slices.Clone(cards))) != len(cards) {
			t.Errorf("instance %s (%s) of node %s has EFA interfaces on cards %v, want %d, one per card",
				aws.ToString(inst.InstanceId), inst.InstanceType, nodeName, cards, maxEFA)
		}
		// 3. The node advertises them, enough for its pods, and its
		// NodeClaim expected them.
		allocatable := node.Status.Allocatable[awsv1.ResourceEFA]
		if allocatable.Value() != int64(maxEFA) || allocatable.Value() < podsOn {
			t.Errorf("node %s advertises %s EFA devices for %d pods, want %d", nodeName, allocatable.String(), podsOn, maxEFA)
		}
		claim := framework.NodeClaimOfNode(t, e.Client, nodeName)
		if got := claim.Status.Capacity[awsv1.ResourceEFA]; got.Value() != int64(maxEFA) {
			t.Errorf("NodeClaim %s capacity %s EFA, want %d", claim.Name, got.String(), maxEFA)
		}
	}

	// 4. A pod without the request in the same pool gets a plain
	// interface: EFA is laid out only for the pods that ask.
	plain := framework.Deployment(name+"-plain", name, name, 1, "1")
	// Kept off the EFA pods' nodes, it needs a node of its own.
	plain.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels}}}}}
	framework.Create(t, e.Client, plain)
	framework.Eventually(t, awsenv.ScaleTimeout, func(ctx context.Context) (bool, string) {
		available := framework.AvailablePods(ctx, e.Client, name, map[string]string{"app": plain.Name})
		if len(available) != 1 {
			return false, fmt.Sprintf("%d of 1 pod without EFA available", len(available))
		}
		node := e.Node(t, available[0].Spec.NodeName)
		inst, ok := e.InstanceOf(node.Spec.ProviderID)
		if !ok {
			t.Fatalf("no simulated instance behind %s", node.Spec.ProviderID)
		}
		for _, ni := range inst.NetworkInterfaces {
			if kind := aws.ToString(ni.InterfaceType); kind == string(ec2types.NetworkInterfaceTypeEfa) || kind == string(ec2types.NetworkInterfaceTypeEfaOnly) {
				t.Errorf("instance %s of the pod without EFA has a %s interface", aws.ToString(inst.InstanceId), kind)
			}
		}
		if q, ok := node.Status.Allocatable[awsv1.ResourceEFA]; ok {
			t.Errorf("node %s of the pod without EFA advertises %s EFA devices", node.Name, q.String())
		}
		return true, ""
	})
}
