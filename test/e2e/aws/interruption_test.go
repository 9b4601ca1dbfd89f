package aws_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test/awssim"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

// spotNotice is how long EC2 gives a spot instance after its interruption
// warning.
const spotNotice = 2 * time.Minute

// TestSpotInterruptionAndStateChange runs two pods on two spot nodes, sends
// the spot interruption warning for one node's instance through the SQS
// queue and checks that before the two-minute notice ends a replacement
// node is Ready and the pods run elsewhere, and that no instance launched
// after the warning uses the interrupted spot pool. Then a state-change
// "terminated" message for the other node's instance removes its NodeClaim
// (and karp terminates the instance). Every message is deleted once handled.
func TestSpotInterruptionAndStateChange(t *testing.T) {
	const name = "e2e-spot"
	e := awsenv.Start(t)
	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name).Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot))
	framework.Create(t, e.Client, framework.SpreadOverHosts(framework.Deployment(name, name, name, 2, "500m")))
	pods := e.WaitAvailable(t, name, 2)

	// 1. The warning for the first pod's node.
	victim := e.Node(t, pods[0].Spec.NodeName)
	inst, ok := e.InstanceOf(victim.Spec.ProviderID)
	if !ok || inst.InstanceLifecycle != ec2types.InstanceLifecycleTypeSpot {
		t.Fatalf("node %s: instance %v is not a simulated spot instance", victim.Name, inst.InstanceId)
	}
	interrupted := pool{string(inst.InstanceType), aws.ToString(inst.Placement.AvailabilityZone)}
	launchedBefore := len(e.Sim.Instances())
	if err := e.Sim.SendInterruption(t.Context(), awssim.SpotInterruption, aws.ToString(inst.InstanceId)); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, spotNotice, func(ctx context.Context) (bool, string) {
		available := framework.AvailablePods(ctx, e.Client, name, nil)
		elsewhere, readyReplacement := 0, false
		for _, p := range available {
			if p.Spec.NodeName != victim.Name {
				elsewhere++
			}
		}
		for _, n := range poolNodes(ctx, e.Client, name) {
			if n.Name != victim.Name && n.Name != pods[1].Spec.NodeName && framework.NodeReady(&n) {
				readyReplacement = true
			}
		}
		gone := nodeGone(ctx, e.Client, victim.Name)
		return elsewhere == 2 && readyReplacement && gone,
			fmt.Sprintf("%d of 2 pods available off the interrupted node, replacement Ready %t, interrupted node gone %t", elsewhere, readyReplacement, gone)
	})
	for _, launched := range e.Sim.Instances()[launchedBefore:] {
		if launched.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot &&
			(pool{string(launched.InstanceType), aws.ToString(launched.Placement.AvailabilityZone)}) == interrupted {
			t.Errorf("instance %s was launched in the interrupted spot pool %v", aws.ToString(launched.InstanceId), interrupted)
		}
	}

	// 2. A state change to terminated for the other original node: only
	// the message can remove its NodeClaim (the instance still runs).
	other := e.Node(t, pods[1].Spec.NodeName)
	claim := framework.NodeClaimOfNode(t, e.Client, other.Name)
	otherInst, _ := e.InstanceOf(other.Spec.ProviderID)
	if err := e.Sim.SendInterruption(t.Context(), awssim.StateTerminated, aws.ToString(otherInst.InstanceId)); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, awsenv.ScaleTimeout, func(ctx context.Context) (bool, string) {
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(claim), &karpv1.NodeClaim{})
		now, _ := e.Sim.Instance(aws.ToString(otherInst.InstanceId))
		return client.IgnoreNotFound(err) == nil && err != nil && !awsenv.Live(now),
			fmt.Sprintf("NodeClaim %s: %v; instance %s", claim.Name, err, now.State.Name)
	})
	e.WaitAvailable(t, name, 2)
	framework.Eventually(t, time.Minute, func(context.Context) (bool, string) {
		counts := e.Sim.SQS.Messages(e.Sim.QueueName())
		return counts.Visible == 0 && counts.InFlight == 0 && counts.Deleted >= 2,
			fmt.Sprintf("interruption queue: %+v", counts)
	})
}

type pool struct{ instanceType, zone string }

func nodeGone(ctx context.Context, cl client.Client, name string) bool {
	err := cl.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{})
	return err != nil && client.IgnoreNotFound(err) == nil
}
