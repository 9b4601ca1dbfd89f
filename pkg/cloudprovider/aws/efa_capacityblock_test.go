package aws_test

import (
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// A NodeClaim whose pods request EFA launches with one EFA interface per
// EFA its type has (p4d.24xlarge: 4) and advertises them; without the
// request the same type launches with one plain interface and advertises
// none.
func TestLaunchWithEFA(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	for name, tc := range map[string]struct {
		requestEFA bool
		wantTypes  []string
		wantEFA    int64
	}{
		"requested":     {requestEFA: true, wantTypes: []string{"efa", "efa", "efa", "efa"}, wantEFA: 4},
		"not requested": {wantTypes: []string{""}},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			nc := withRequirement(newNodeClaim("efa", nodeClass.Name), corev1.LabelInstanceTypeStable, "p4d.24xlarge")
			nc = withRequirement(nc, karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand)
			if tc.requestEFA {
				nc.Spec.Resources.Requests = corev1.ResourceList{awsv1.ResourceEFA: resource.MustParse("1")}
			}
			created, err := w.Provider.Create(ctx, nc)
			if err != nil {
				t.Fatal(err)
			}
			in := w.EC2.CreateFleetInputs()[0]
			data, _ := w.EC2.LaunchTemplateData(awssdk.ToString(in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName))
			var gotTypes []string
			for i, ni := range data.NetworkInterfaces {
				gotTypes = append(gotTypes, awssdk.ToString(ni.InterfaceType))
				if tc.requestEFA && (awssdk.ToInt32(ni.NetworkCardIndex) != int32(i) || awssdk.ToInt32(ni.DeviceIndex) != min(int32(i), 1)) {
					t.Errorf("interface %d on card %d device %d, want card %d device %d", i, awssdk.ToInt32(ni.NetworkCardIndex), awssdk.ToInt32(ni.DeviceIndex), i, min(i, 1))
				}
			}
			if len(gotTypes) != len(tc.wantTypes) || (len(gotTypes) > 0 && gotTypes[0] != tc.wantTypes[0]) {
				t.Errorf("interfaces of types %q, want %q", gotTypes, tc.wantTypes)
			}
			efa := created.Status.Capacity[awsv1.ResourceEFA]
			allocatable := created.Status.Allocatable[awsv1.ResourceEFA]
			if efa.Value() != tc.wantEFA || allocatable.Value() != tc.wantEFA {
				t.Errorf("nodeclaim advertises %s EFA capacity, %s allocatable, want %d", efa.String(), allocatable.String(), tc.wantEFA)
			}
		})
	}
}

// A NodeClaim launched into a capacity block asks EC2 for the
// capacity-block market, in the fleet and in the launch template, and the
// instance runs in the block.
func TestLaunchIntoACapacityBlock(t *testing.T) {
	ctx := t.Context()
	const id = "cr-0b10c0000000000001"
	end := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	nodeClass.Status.CapacityReservations = []awsv1.CapacityReservation{{
		ID: id, AvailabilityZone: zones[0].Name, InstanceType: "p4d.24xlarge", InstanceMatchCriteria: "targeted",
		OwnerID: fake.AccountID, ReservationType: awsv1.CapacityReservationTypeCapacityBlock, State: "active", EndTime: &metav1.Time{Time: end},
	}}
	if err := env.Client.Status().Update(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	w.EC2.AddCapacityReservations(fake.NewCapacityBlock(id, "p4d.24xlarge", zones[0].Name, 1, end))

	// The reserved offering is the cheapest of the type: the NodeClaim
	// launches into it.
	created, err := w.Provider.Create(ctx, withRequirement(newNodeClaim("block", nodeClass.Name), corev1.LabelInstanceTypeStable, "p4d.24xlarge"))
	if err != nil {
		t.Fatal(err)
	}
	if created.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeReserved || created.Labels[awsv1.LabelCapacityReservationID] != id {
		t.Errorf("labels %v, want reserved in %s", created.Labels, id)
	}
	in := w.EC2.CreateFleetInputs()[0]
	if got := in.TargetCapacitySpecification.DefaultTargetCapacityType; got != ec2types.DefaultTargetCapacityTypeCapacityBlock {
		t.Errorf("fleet target capacity type %q, want capacity-block", got)
	}
	if in.OnDemandOptions != nil || in.SpotOptions != nil {
		t.Errorf("fleet options %+v / %+v, want none for a capacity block", in.OnDemandOptions, in.SpotOptions)
	}
	data, _ := w.EC2.LaunchTemplateData(awssdk.ToString(in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName))
	if m := data.InstanceMarketOptions; m == nil || m.MarketType != ec2types.MarketTypeCapacityBlock {
		t.Errorf("launch template market %+v, want capacity-block", m)
	}
	if spec := data.CapacityReservationSpecification; spec == nil || spec.CapacityReservationPreference != ec2types.CapacityReservationPreferenceCapacityReservationsOnly ||
		awssdk.ToString(spec.CapacityReservationTarget.CapacityReservationId) != id {
		t.Errorf("launch template reservation %+v, want capacity-reservations-only targeting %s", spec, id)
	}
	instances := w.EC2.Instances()
	if len(instances) != 1 || instances[0].InstanceLifecycle != ec2types.InstanceLifecycleTypeCapacityBlock || awssdk.ToString(instances[0].CapacityReservationId) != id {
		t.Errorf("instances %+v, want one capacity-block instance in %s", instances, id)
	}
}
