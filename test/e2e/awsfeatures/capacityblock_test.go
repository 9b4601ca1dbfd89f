package awsfeatures_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/capacityreservation/expiration"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

// blockMargin is how long after the test buys it the capacity block
// enters karp's drain window (capacityreservation.ExpiringWindow, 40
// minutes before its end): time enough to select it and launch into it.
const blockMargin = 90 * time.Second

// testCapacityBlockExpiry buys a one-instance capacity block that ends
// just past karp's drain lead and runs a pod on a NodePool that takes
// reserved capacity first and on-demand otherwise, its EC2NodeClass
// selecting the block: the pod's node is launched into the block as a
// capacity-block instance. When the block turns expiring, before EC2
// starts reclaiming its instances (30 minutes before the end), karp
// deletes the node's NodeClaim (CapacityBlockExpiring, counted as
// capacity_block_expiration), drains it and terminates the instance, and
// the pod runs again on an on-demand node.
func testCapacityBlockExpiry(t *testing.T, e *awsenv.Env) {
	const name, id, instanceType = "e2e-block", "cr-0e2eb10c4", "p5.4xlarge"
	zone := e.Sim.Zones()[0].Name
	end := time.Now().Add(capacityreservation.ExpiringWindow + blockMargin).Truncate(time.Second)
	expiringAt, reclaimAt := end.Add(-capacityreservation.ExpiringWindow), end.Add(-fake.CapacityBlockReclaimLead)
	e.Sim.EC2.AddCapacityReservations(fake.NewCapacityBlock(id, instanceType, zone, 1, end))
	nodeClass := e.NodeClass(name)
	nodeClass.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: id}}
	e.SetUp(t, nodeClass, test.MakeNodePool(name).NodeClassRef(awsv1.NodeClassReference(name)).
		Requirement(awsv1.LabelInstanceFamily, corev1.NodeSelectorOpIn, "p5").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeReserved, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)))
	framework.Create(t, e.Client, framework.Deployment(name, name, name, 1, "1"))
	pods := e.WaitAvailable(t, name, 1)

	// 1. The node runs in the block, as a capacity-block instance launched
	// before the block turned expiring.
	node := e.Node(t, pods[0].Spec.NodeName)
	claim := framework.NodeClaimOfNode(t, e.Client, node.Name)
	inst, ok := e.InstanceOf(node.Spec.ProviderID)
	if !ok {
		t.Fatalf("no simulated instance behind %s", node.Spec.ProviderID)
	}
	if aws.ToString(inst.CapacityReservationId) != id || inst.InstanceLifecycle != ec2types.InstanceLifecycleTypeCapacityBlock {
		t.Fatalf("the pod runs on instance %s (%s, launched %s), reservation %q, lifecycle %q; want one launched into %s as capacity-block before it turned expiring at %s",
			aws.ToString(inst.InstanceId), node.Labels[karpv1.CapacityTypeLabelKey], aws.ToTime(inst.LaunchTime).Format(time.RFC3339),
			aws.ToString(inst.CapacityReservationId), inst.InstanceLifecycle, id, expiringAt.Format(time.RFC3339))
	}
	if launched := aws.ToTime(inst.LaunchTime); !launched.Before(expiringAt) {
		t.Fatalf("launched into the block at %s, after it turned expiring at %s", launched.Format(time.RFC3339), expiringAt.Format(time.RFC3339))
	}
	for key, want := range map[string]string{
		karpv1.CapacityTypeLabelKey:        karpv1.CapacityTypeReserved,
		awsv1.LabelCapacityReservationID:   id,
		awsv1.LabelCapacityReservationType: awsv1.CapacityReservationTypeCapacityBlock,
	} {
		if got := node.Labels[key]; got != want {
			t.Errorf("node %s label %s=%q, want %q", node.Name, key, got, want)
		}
	}

	// 2. Once the block is expiring, karp drains the node and the pod
	// moves to on-demand capacity, before EC2 would reclaim the instance.
	framework.Eventually(t, blockMargin+awsenv.ScaleTimeout, func(ctx context.Context) (bool, string) {
		now, _ := e.Sim.Instance(aws.ToString(inst.InstanceId))
		claimGone, nodeGone := gone(ctx, e.Client, claim), gone(ctx, e.Client, node)
		var moved []string
		for _, p := range framework.AvailablePods(ctx, e.Client, name, nil) {
			if n := p.Spec.NodeName; n != node.Name {
				other := &corev1.Node{}
				if err := e.Client.Get(ctx, client.ObjectKey{Name: n}, other); err != nil {
					return false, fmt.Sprintf("node %s of a moved pod: %v", n, err)
				}
				moved = append(moved, other.Labels[karpv1.CapacityTypeLabelKey])
			}
		}
		ok := claimGone && nodeGone && !awsenv.Live(now) && len(moved) == 1 && moved[0] == karpv1.CapacityTypeOnDemand
		return ok, fmt.Sprintf("block's NodeClaim gone %t, node gone %t, instance %s; pods available elsewhere on capacity types %v",
			claimGone, nodeGone, now.State.Name, moved)
	})
	if drained := time.Now(); drained.Before(expiringAt) || !drained.Before(reclaimAt) {
		t.Errorf("drained at %s, want between the block turning expiring (%s) and EC2 reclaiming (%s)",
			drained.Format(time.RFC3339), expiringAt.Format(time.RFC3339), reclaimAt.Format(time.RFC3339))
	}
	if !hasEvent(t, e.Client, "NodeClaim", claim.Name, expiration.ReasonCapacityBlockExpiring) {
		t.Errorf("no %s event on NodeClaim %s", expiration.ReasonCapacityBlockExpiring, claim.Name)
	}
	if got := awsenv.MetricSum(e.Metrics(), "karpenter_nodeclaims_disrupted_total",
		fmt.Sprintf("reason=%q", expiration.Reason), fmt.Sprintf("nodepool=%q", name)); got != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=%q,nodepool=%q} = %v, want 1", expiration.Reason, name, got)
	}
}
