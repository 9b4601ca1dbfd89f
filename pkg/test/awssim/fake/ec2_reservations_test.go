package fake

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// launchReserved launches one m5.large in zone-a into the reservation
// through a launch template targeting it with market (if any).
func launchReserved(t *testing.T, e *EC2, id string, market ec2types.MarketType) string {
	t.Helper()
	data := &ec2types.RequestLaunchTemplateData{
		ImageId: aws.String("ami-1"),
		CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
			CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(id)},
		},
	}
	if market != "" {
		data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: market}
	}
	if _, err := e.CreateLaunchTemplate(t.Context(), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt-" + id), LaunchTemplateData: data}); err != nil {
		t.Fatal(err)
	}
	out, err := e.CreateFleet(t.Context(), &ec2.CreateFleetInput{
		Type:                        ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: "on-demand"},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("lt-" + id), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", AvailabilityZone: aws.String("zone-a"), SubnetId: aws.String("subnet-a")}},
		}},
	})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("launching into %s: %v %+v", id, err, out)
	}
	return out.Instances[0].InstanceIds[0]
}

func describe(t *testing.T, e *EC2, id string) ec2types.Instance {
	t.Helper()
	out, err := e.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Reservations[0].Instances[0]
}

func reservationState(t *testing.T, e *EC2, id string) ec2types.CapacityReservationState {
	t.Helper()
	out, err := e.DescribeCapacityReservations(t.Context(), &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	return out.CapacityReservations[0].State
}

func TestReservedInstancesReportTheirLifecycle(t *testing.T) {
	e := NewEC2()
	end := time.Now().Add(24 * time.Hour)
	interruptible := NewCapacityReservation("cr-interruptible", "m5.large", "zone-a", 1, nil)
	interruptible.Interruptible = aws.Bool(true)
	e.AddCapacityReservations(NewCapacityReservation("cr-odcr", "m5.large", "zone-a", 1, nil), interruptible,
		NewCapacityBlock("cr-block", "m5.large", "zone-a", 1, end))
	for id, tc := range map[string]struct {
		market ec2types.MarketType
		want   ec2types.InstanceLifecycleType
	}{
		"cr-odcr":          {},
		"cr-interruptible": {market: ec2types.MarketTypeInterruptibleCapacityReservation, want: ec2types.InstanceLifecycleTypeInterruptibleCapacityReservation},
		"cr-block":         {market: ec2types.MarketTypeCapacityBlock, want: ec2types.InstanceLifecycleTypeCapacityBlock},
	} {
		inst := describe(t, e, launchReserved(t, e, id, tc.market))
		if inst.InstanceLifecycle != tc.want || aws.ToString(inst.CapacityReservationId) != id {
			t.Errorf("%s: lifecycle %q in %q, want %q in %s", id, inst.InstanceLifecycle, aws.ToString(inst.CapacityReservationId), tc.want, id)
		}
	}
}

func TestEndedReservationsLetTheirInstancesGo(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	e := NewEC2()
	e.SetLaunchClock(clk)
	e.SetTerminationDelay(time.Minute)
	odcr := NewCapacityReservation("cr-odcr", "m5.large", "zone-a", 2, nil)
	odcr.EndDate = aws.Time(start.Add(2 * time.Hour))
	e.AddCapacityReservations(odcr, NewCapacityReservation("cr-cancelled", "m5.large", "zone-a", 1, nil),
		NewCapacityBlock("cr-block", "m5.large", "zone-a", 1, start.Add(time.Hour)))
	inODCR := launchReserved(t, e, "cr-odcr", "")
	inCancelled := launchReserved(t, e, "cr-cancelled", "")
	inBlock := launchReserved(t, e, "cr-block", ec2types.MarketTypeCapacityBlock)

	// A cancelled reservation's instance keeps running, outside it.
	if !e.SetCapacityReservationState("cr-cancelled", ec2types.CapacityReservationStateCancelled) {
		t.Fatal("cr-cancelled not found")
	}
	if inst := describe(t, e, inCancelled); inst.CapacityReservationId != nil || inst.State.Name != ec2types.InstanceStateNameRunning {
		t.Errorf("after cancelling: %s in %q, want running outside the reservation", inst.State.Name, aws.ToString(inst.CapacityReservationId))
	}
	// 31 minutes before its end the block's instance is still running.
	clk.SetTime(start.Add(time.Hour - CapacityBlockReclaimLead - time.Minute))
	e.AdvanceCapacityReservations()
	if inst := describe(t, e, inBlock); inst.State.Name != ec2types.InstanceStateNameRunning {
		t.Errorf("31 minutes before the block ends its instance is %s, want running", inst.State.Name)
	}
	// From 30 minutes before its end EC2 reclaims it; the block is still active.
	clk.SetTime(start.Add(time.Hour - CapacityBlockReclaimLead))
	if s := reservationState(t, e, "cr-block"); s != ec2types.CapacityReservationStateActive {
		t.Errorf("block 30 minutes before its end is %s, want active", s)
	}
	if inst := describe(t, e, inBlock); inst.State.Name != ec2types.InstanceStateNameShuttingDown {
		t.Errorf("30 minutes before the block ends its instance is %s, want shutting-down", inst.State.Name)
	}
	// At its end the block expires.
	clk.SetTime(start.Add(time.Hour))
	if s := reservationState(t, e, "cr-block"); s != ec2types.CapacityReservationStateExpired {
		t.Errorf("block at its end is %s, want expired", s)
	}
	// At its end date the ODCR expires and its instance runs on, on-demand.
	if inst := describe(t, e, inODCR); aws.ToString(inst.CapacityReservationId) != "cr-odcr" {
		t.Errorf("before the ODCR ends its instance is in %q, want cr-odcr", aws.ToString(inst.CapacityReservationId))
	}
	clk.SetTime(start.Add(2 * time.Hour))
	e.AdvanceCapacityReservations()
	if s := reservationState(t, e, "cr-odcr"); s != ec2types.CapacityReservationStateExpired {
		t.Errorf("ODCR at its end date is %s, want expired", s)
	}
	if inst := describe(t, e, inODCR); inst.CapacityReservationId != nil || inst.State.Name != ec2types.InstanceStateNameRunning {
		t.Errorf("after the ODCR expired: %s in %q, want running outside it", inst.State.Name, aws.ToString(inst.CapacityReservationId))
	}
}
