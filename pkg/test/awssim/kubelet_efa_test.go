package awssim

import (
	"encoding/base64"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/userdata"
)

// TestNodeAdvertisesTheEFADevicesItLaunchedWith launches an EFA-capable
// type (two EFA interfaces) from a template with two EFA interfaces, one
// with one, and one with a plain interface: the Node advertises
// vpc.amazonaws.com/efa for the devices attached, as the EFA device
// plugin does, and none without them.
func TestNodeAdvertisesTheEFADevicesItLaunchedWith(t *testing.T) {
	sim := newTestSim(t)
	rendered, err := userdata.Render(awsv1.AMIFamilyAL2023, userdata.Options{
		ClusterName: "karp-local", ClusterEndpoint: "https://127.0.0.1:6443", CABundle: "Y2E=", ClusterCIDR: "10.96.0.0/16",
	})
	if err != nil {
		t.Fatal(err)
	}
	efa := func(card int32) ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
		return ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			InterfaceType: aws.String(string(ec2types.NetworkInterfaceTypeEfa)), NetworkCardIndex: aws.Int32(card), DeviceIndex: aws.Int32(min(card, 1)),
		}
	}
	for name, tc := range map[string]struct {
		interfaces []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest
		want       int64
	}{
		"two EFA interfaces": {interfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{efa(0), efa(1)}, want: 2},
		"one EFA interface":  {interfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{efa(0)}, want: 1},
		"a plain interface":  {interfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{DeviceIndex: aws.Int32(0)}}, want: 0},
		"no interfaces":      {},
	} {
		t.Run(name, func(t *testing.T) {
			template := "efa-" + base64.RawURLEncoding.EncodeToString([]byte(name))
			if _, err := sim.EC2.CreateLaunchTemplate(t.Context(), &ec2.CreateLaunchTemplateInput{
				LaunchTemplateName: aws.String(template),
				LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-efa"),
					UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(rendered))), NetworkInterfaces: tc.interfaces},
			}); err != nil {
				t.Fatal(err)
			}
			out, err := sim.EC2.CreateFleet(t.Context(), &ec2.CreateFleetInput{
				Type:        ec2types.FleetTypeInstant,
				ClientToken: aws.String(template),
				TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
					TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
				},
				LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
					LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(template), Version: aws.String("$Latest")},
					Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{{
						InstanceType: "c6in.32xlarge", AvailabilityZone: aws.String(sim.Zones()[0].Name), SubnetId: aws.String("subnet-private1"),
					}},
				}},
			})
			if err != nil || len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
				t.Fatalf("CreateFleet: %+v, %v", out, err)
			}
			inst, _ := sim.Instance(out.Instances[0].InstanceIds[0])
			l, err := sim.launchOf(inst)
			if err != nil {
				t.Fatal(err)
			}
			boot, err := parseUserData(l.userData)
			if err != nil {
				t.Fatal(err)
			}
			node := l.node(boot)
			capacity, hasCapacity := node.Status.Capacity[awsv1.ResourceEFA]
			allocatable, hasAllocatable := node.Status.Allocatable[awsv1.ResourceEFA]
			if tc.want == 0 {
				if hasCapacity || hasAllocatable {
					t.Errorf("node advertises %s EFA devices (allocatable %s), want none", capacity.String(), allocatable.String())
				}
				return
			}
			if capacity.Value() != tc.want || allocatable.Value() != tc.want {
				t.Errorf("node advertises %s EFA devices (allocatable %s), want %d", capacity.String(), allocatable.String(), tc.want)
			}
		})
	}
}
