package v1_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// The status subresource stores what discovery resolved, with upstream's
// defaults for capacity reservations, and Ready follows the dependents.
func TestEC2NodeClassStatus(t *testing.T) {
	ctx := t.Context()
	nc := validNodeClass()
	if err := kubeClient.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), nc) })

	nc.Status = awsv1.EC2NodeClassStatus{
		Subnets:        []awsv1.Subnet{{ID: "subnet-1", Zone: "us-west-2a", ZoneID: "usw2-az1"}},
		SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-1", Name: "nodes"}},
		CapacityReservations: []awsv1.CapacityReservation{{
			AvailabilityZone: "us-west-2a", ID: "cr-1", InstanceMatchCriteria: "targeted", InstanceType: "m5.large", OwnerID: "012345678901",
		}},
		AMIs: []awsv1.AMI{{ID: "ami-1", Name: "al2023", Requirements: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		}}},
		InstanceProfile: "KarpenterNodeInstanceProfile",
		PlacementGroup:  &awsv1.PlacementGroup{ID: "pg-0b2", Name: "kafka", Strategy: awsv1.PlacementGroupStrategyPartition, PartitionCount: 3},
	}
	conditions := nc.StatusConditions()
	conditions.Initialize()
	for _, c := range []string{awsv1.ConditionTypeAMIsReady, awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady,
		awsv1.ConditionTypeInstanceProfileReady, awsv1.ConditionTypeCapacityReservationsReady, awsv1.ConditionTypePlacementGroupReady} {
		conditions.SetTrue(c)
	}
	if conditions.IsTrue(awsv1.ConditionTypeReady) {
		t.Fatal("Ready is True before ValidationSucceeded")
	}
	conditions.SetTrue(awsv1.ConditionTypeValidationSucceeded)
	if err := kubeClient.Status().Update(ctx, nc); err != nil {
		t.Fatalf("updating status: %v", err)
	}

	got := &awsv1.EC2NodeClass{}
	if err := kubeClient.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if !got.StatusConditions().IsTrue(awsv1.ConditionTypeReady) {
		t.Errorf("conditions = %+v, want Ready True", got.Status.Conditions)
	}
	cr := got.Status.CapacityReservations[0]
	if cr.ReservationType != awsv1.CapacityReservationTypeDefault || cr.State != "active" {
		t.Errorf("capacity reservation defaults: type %q state %q, want default/active", cr.ReservationType, cr.State)
	}
	if pg := got.Status.PlacementGroup; pg == nil || pg.ID != "pg-0b2" || pg.PartitionCount != 3 {
		t.Errorf("status.placementGroup not stored: %+v", pg)
	}
	if got.Status.Subnets[0].ZoneID != "usw2-az1" || got.Status.InstanceProfile != "KarpenterNodeInstanceProfile" || len(got.Status.AMIs[0].Requirements) != 1 {
		t.Errorf("status not stored: %+v", got.Status)
	}

	got.StatusConditions().SetFalse(awsv1.ConditionTypeSubnetsReady, awsv1.ConditionReasonSubnetsNotFound, "SubnetSelector did not match any Subnets")
	ready := got.StatusConditions().Get(awsv1.ConditionTypeReady)
	if ready.Status != metav1.ConditionFalse || ready.Reason != awsv1.ConditionReasonSubnetsNotFound {
		t.Errorf("Ready after SubnetsReady=False: %+v", ready)
	}
}
