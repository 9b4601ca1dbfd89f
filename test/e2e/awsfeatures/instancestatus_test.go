package awsfeatures_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption/instancestatus"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

// unhealthyMetric counts the unhealthy instances the status poll found.
const unhealthyMetric = "karpenter_interruption_instance_status_unhealthy_total"

// testImpairedInstanceReplaced runs two pods on two nodes, then EC2
// reports one node's instance status check failing (for longer than the
// poll's threshold): at its next poll (every minute) karp replaces the
// node (a new NodeClaim, the pod running elsewhere, the impaired instance
// terminated), leaves the healthy node alone, publishes InstanceUnhealthy
// and counts the instance once in
// karpenter_interruption_instance_status_unhealthy_total.
func testImpairedInstanceReplaced(t *testing.T, e *awsenv.Env) {
	const name = "e2e-impaired"
	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name))
	framework.Create(t, e.Client, framework.SpreadOverHosts(framework.Deployment(name, name, name, 2, "500m")))
	pods := e.WaitAvailable(t, name, 2)
	victim, healthy := e.Node(t, pods[0].Spec.NodeName), e.Node(t, pods[1].Spec.NodeName)
	victimClaim, healthyClaim := framework.NodeClaimOfNode(t, e.Client, victim.Name), framework.NodeClaimOfNode(t, e.Client, healthy.Name)
	inst, ok := e.InstanceOf(victim.Spec.ProviderID)
	if !ok {
		t.Fatalf("no simulated instance behind %s", victim.Spec.ProviderID)
	}
	category := fmt.Sprintf("category=%q", instancestatus.CategoryInstanceStatus)
	before := awsenv.MetricSum(e.Metrics(), unhealthyMetric, category)

	// The instance's reachability check has failed for longer than karp
	// waits for a check to recover by itself.
	e.Sim.EC2.FailStatusCheck(aws.ToString(inst.InstanceId), fake.StatusCheckInstance, time.Now().Add(-instancestatus.UnhealthyThreshold))
	framework.Eventually(t, instancestatus.Interval+awsenv.ScaleTimeout, func(ctx context.Context) (bool, string) {
		now, _ := e.Sim.Instance(aws.ToString(inst.InstanceId))
		replaced := slices.ContainsFunc(framework.PoolNodeClaims(ctx, e.Client, name), func(nc karpv1.NodeClaim) bool {
			return nc.Name != victimClaim.Name && nc.Name != healthyClaim.Name
		})
		elsewhere := 0
		for _, p := range framework.AvailablePods(ctx, e.Client, name, nil) {
			if p.Spec.NodeName != victim.Name {
				elsewhere++
			}
		}
		claimGone, nodeGone := gone(ctx, e.Client, victimClaim), gone(ctx, e.Client, victim)
		return claimGone && nodeGone && !awsenv.Live(now) && replaced && elsewhere == 2,
			fmt.Sprintf("impaired NodeClaim gone %t, node gone %t, instance %s; a new NodeClaim %t; %d of 2 pods available off the impaired node",
				claimGone, nodeGone, now.State.Name, replaced, elsewhere)
	})

	// The healthy node stays; the replacement is published and counted once.
	if gone(t.Context(), e.Client, healthyClaim) {
		t.Errorf("the healthy node's NodeClaim %s was deleted too", healthyClaim.Name)
	}
	if !hasEvent(t, e.Client, "NodeClaim", victimClaim.Name, interruption.ReasonInstanceUnhealthy) {
		t.Errorf("no %s event on NodeClaim %s", interruption.ReasonInstanceUnhealthy, victimClaim.Name)
	}
	framework.Eventually(t, time.Minute, func(context.Context) (bool, string) {
		got := awsenv.MetricSum(e.Metrics(), unhealthyMetric, category) - before
		return got == 1, fmt.Sprintf("%s{%s} grew by %v, want 1", unhealthyMetric, category, got)
	})
}
