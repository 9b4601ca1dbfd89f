package aws_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// moveSubnets resolves the EC2NodeClass to subnets no instance is in.
func moveSubnets(nc *awsv1.EC2NodeClass) {
	nc.Status.Subnets = []awsv1.Subnet{{ID: "subnet-7", Zone: zones[0].Name, ZoneID: zones[0].ID}}
}

// TestNoDriftVerdict: the checks that would say SubnetDrift say nothing
// while the EC2NodeClass cannot be trusted or the instance is gone.
func TestNoDriftVerdict(t *testing.T) {
	ctx := t.Context()
	tests := map[string]func(t *testing.T, w *world, nodeClass *awsv1.EC2NodeClass, launched *karpv1.NodeClaim){
		"the EC2NodeClass is not Ready": func(t *testing.T, _ *world, nodeClass *awsv1.EC2NodeClass, _ *karpv1.NodeClaim) {
			nc := reconciled(t, nodeClass.Name, moveSubnets)
			nc.StatusConditions().SetFalse(awsv1.ConditionTypeSecurityGroupsReady, "SecurityGroupsNotFound", "SecurityGroupSelector did not match any SecurityGroups")
			if err := env.Client.Status().Update(ctx, nc); err != nil {
				t.Fatal(err)
			}
		},
		"the EC2NodeClass is gone": func(t *testing.T, _ *world, nodeClass *awsv1.EC2NodeClass, _ *karpv1.NodeClaim) {
			reconciled(t, nodeClass.Name, moveSubnets)
			if err := env.Client.Delete(ctx, nodeClass); err != nil {
				t.Fatal(err)
			}
		},
		"the instance is gone": func(t *testing.T, w *world, nodeClass *awsv1.EC2NodeClass, launched *karpv1.NodeClaim) {
			reconciled(t, nodeClass.Name, moveSubnets)
			id, err := instance.ParseProviderID(launched.Status.ProviderID)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.EC2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			nodeClass := createNodeClass(t, newNodeClass(nil), true)
			w := newWorld(t)
			launched := launch(t, w, newNodeClaim("verdict", nodeClass.Name))
			change(t, w, nodeClass, launched)
			if got := isDrifted(t, w.Provider, launched); got != "" {
				t.Errorf("IsDrifted = %q, want no verdict", got)
			}
		})
	}
	// The same change on a Ready, reconciled EC2NodeClass is drift: the
	// cases above hold back a verdict that exists.
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	launched := launch(t, w, newNodeClaim("verdict", nodeClass.Name))
	stored := reconciled(t, nodeClass.Name, moveSubnets)
	if got := isDrifted(t, w.Provider, launched); got != aws.SubnetDrift {
		t.Errorf("IsDrifted = %q, want %s", got, aws.SubnetDrift)
	}
	// A spec edit the status controller has not resolved yet leaves the
	// verdict standing (it is judged on the status resolved before).
	stored.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-7"}}
	if err := env.Client.Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if got := isDrifted(t, w.Provider, launched); got != aws.SubnetDrift {
		t.Errorf("with a spec edit pending: IsDrifted = %q, want %s", got, aws.SubnetDrift)
	}
}

func TestCapacityReservationDrift(t *testing.T) {
	const id = "cr-0123456789abcdef0"
	reservation := awsv1.CapacityReservation{
		ID: id, AvailabilityZone: zones[0].Name, InstanceType: "m5.large",
		InstanceMatchCriteria: "targeted", OwnerID: "123456789012", ReservationType: "default", State: "active",
	}
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	reconciled(t, nodeClass.Name, func(nc *awsv1.EC2NodeClass) {
		nc.Status.CapacityReservations = []awsv1.CapacityReservation{reservation}
	})
	w := newWorld(t)
	w.EC2.AddCapacityReservations(fake.NewCapacityReservation(id, "m5.large", zones[0].Name, 1, nil))
	reserved := launch(t, w, newNodeClaim("reserved", nodeClass.Name))
	if reserved.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeReserved {
		t.Fatalf("launched %v, want a reserved instance", reserved.Labels)
	}
	onDemand := launch(t, w, withRequirement(newNodeClaim("od", nodeClass.Name), karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand))
	if got := isDrifted(t, w.Provider, reserved); got != "" {
		t.Errorf("reservation still selected: IsDrifted = %q, want not drifted", got)
	}
	// The selector no longer matches the reservation: the reserved node
	// drifts, after a fresh look at its instance; the on-demand one not.
	reconciled(t, nodeClass.Name, func(nc *awsv1.EC2NodeClass) { nc.Status.CapacityReservations = nil })
	before := w.EC2.Calls("DescribeInstances")
	if got := isDrifted(t, w.Provider, reserved); got != aws.CapacityReservationDrift {
		t.Errorf("reservation no longer selected: IsDrifted = %q, want %s", got, aws.CapacityReservationDrift)
	}
	if got := w.EC2.Calls("DescribeInstances") - before; got != 1 {
		t.Errorf("%d DescribeInstances calls to confirm, want 1 (the listing is reused, the instance described afresh)", got)
	}
	if got := isDrifted(t, w.Provider, onDemand); got != "" {
		t.Errorf("on-demand node: IsDrifted = %q, want not drifted", got)
	}
}
