package launchtemplate_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

func TestReservedLaunchesTargetTheReservationAndItsMarket(t *testing.T) {
	reservations := []awsv1.CapacityReservation{
		{ID: "cr-odcr", InstanceType: "m5.large", AvailabilityZone: "us-west-2a", ReservationType: awsv1.CapacityReservationTypeDefault, State: "active"},
		{ID: "cr-interruptible", InstanceType: "m5.large", AvailabilityZone: "us-west-2a", ReservationType: awsv1.CapacityReservationTypeDefault, Interruptible: true, State: "active"},
		{ID: "cr-block", InstanceType: "m5.large", AvailabilityZone: "us-west-2a", ReservationType: awsv1.CapacityReservationTypeCapacityBlock, State: "active"},
	}
	targeting := func(id string) *ec2types.LaunchTemplateCapacityReservationSpecificationRequest {
		return &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
			CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(id)},
		}
	}
	noReservation := &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{CapacityReservationPreference: ec2types.CapacityReservationPreferenceNone}
	for name, tc := range map[string]struct {
		capacityType, reservationID string
		wantSpec                    *ec2types.LaunchTemplateCapacityReservationSpecificationRequest
		wantMarket                  *ec2types.LaunchTemplateInstanceMarketOptionsRequest
	}{
		"on-demand stays out of open reservations": {capacityType: karpv1.CapacityTypeOnDemand, wantSpec: noReservation},
		"spot stays out of open reservations":      {capacityType: karpv1.CapacityTypeSpot, wantSpec: noReservation},
		"an on-demand capacity reservation":        {capacityType: karpv1.CapacityTypeReserved, reservationID: "cr-odcr", wantSpec: targeting("cr-odcr")},
		"an interruptible reservation": {capacityType: karpv1.CapacityTypeReserved, reservationID: "cr-interruptible", wantSpec: targeting("cr-interruptible"),
			wantMarket: &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeInterruptibleCapacityReservation}},
		"a capacity block": {capacityType: karpv1.CapacityTypeReserved, reservationID: "cr-block", wantSpec: targeting("cr-block"),
			wantMarket: &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}},
	} {
		t.Run(name, func(t *testing.T) {
			nc := nodeClass(func(nc *awsv1.EC2NodeClass) { nc.Status.CapacityReservations = reservations })
			req := request(nc, tc.capacityType, instanceType("m5.large", "amd64", 29))
			req.ReservationID = tc.reservationID
			e := fake.NewEC2()
			p := launchtemplate.NewProvider(e, clocktesting.NewFakeClock(time.Now()), opts)
			lts, err := p.EnsureAll(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := e.LaunchTemplateData(lts[0].Name)
			if diff := cmp.Diff(tc.wantSpec, data.CapacityReservationSpecification, cmpOpts); diff != "" {
				t.Errorf("CapacityReservationSpecification (-want,+got)\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMarket, data.InstanceMarketOptions, cmpOpts); diff != "" {
				t.Errorf("InstanceMarketOptions (-want,+got)\n%s", diff)
			}
		})
	}
}

// cmpOpts compare SDK types, which hold an unexported noSmithyDocumentSerde.
var cmpOpts = cmp.Exporter(func(reflect.Type) bool { return true })
