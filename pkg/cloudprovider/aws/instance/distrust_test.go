package instance

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// placement is the zone and subnet the fake launched the instance into.
func placement(t *testing.T, e *fake.EC2, id string) (zone, subnet string) {
	t.Helper()
	for _, inst := range e.Instances() {
		if aws.ToString(inst.InstanceId) == id {
			return aws.ToString(inst.Placement.AvailabilityZone), aws.ToString(inst.SubnetId)
		}
	}
	t.Fatalf("the fake has no instance %s", id)
	return "", ""
}

// A launch whose CreateFleet answer lacks the per-instance zone and subnet
// still learns them: from the fleet override that produced the instance,
// from the subnet that override names, or from DescribeInstances.
func TestCreateFindsTheZoneWithoutThePerInstanceFields(t *testing.T) {
	tests := map[string]func(e *fake.EC2){
		"from the override's zone": func(e *fake.EC2) {
			e.FleetOmitsInstancePlacement = true
		},
		"from the override's subnet": func(e *fake.EC2) {
			e.FleetOmitsInstancePlacement, e.FleetOmitsOverrideZones = true, true
		},
		"from DescribeInstances": func(e *fake.EC2) {
			e.FleetOmitsInstancePlacement, e.FleetOmitsOverrides = true, true
		},
	}
	for name, degrade := range tests {
		t.Run(name, func(t *testing.T) {
			e := newFakeEC2(t)
			degrade(e)
			p := NewProvider(e, clock.RealClock{}, "test-cluster", nil)
			inst, err := p.Create(t.Context(), request("zoned", "on-demand"))
			if err != nil {
				t.Fatal(err)
			}
			wantZone, wantSubnet := placement(t, e, inst.ID)
			if wantZone == "" {
				t.Fatal("the fake launched without a zone")
			}
			if inst.Zone != wantZone || inst.SubnetID != wantSubnet {
				t.Errorf("Create gave zone %q subnet %q, want %q %q", inst.Zone, inst.SubnetID, wantZone, wantSubnet)
			}
			if want := "aws:///" + wantZone + "/" + inst.ID; inst.ProviderID() != want {
				t.Errorf("providerID %q, want %q", inst.ProviderID(), want)
			}
		})
	}
}

// placementlessEC2 answers DescribeInstances without placements, so no
// source names the zone of a launch whose fleet answer lacks it too.
type placementlessEC2 struct{ *fake.EC2 }

func (e placementlessEC2) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	out, err := e.EC2.DescribeInstances(ctx, in, opts...)
	if out != nil {
		for i := range out.Reservations {
			for j := range out.Reservations[i].Instances {
				out.Reservations[i].Instances[j].Placement = nil
			}
		}
	}
	return out, err
}

// With no zone from any source Create fails, naming the instance, and
// leaves it tagged for the cluster, where the leaked-instance collector
// (which lists and checks it by those tags) finds it.
func TestCreateFailsWithoutAZone(t *testing.T) {
	e := newFakeEC2(t)
	e.FleetOmitsInstancePlacement, e.FleetOmitsOverrides = true, true
	p := NewProvider(placementlessEC2{e}, clock.RealClock{}, "test-cluster", nil)
	inst, err := p.Create(t.Context(), request("nowhere", "on-demand"))
	if err == nil {
		t.Fatalf("Create succeeded with instance %+v and no zone", inst)
	}
	launched := e.Instances()
	if len(launched) != 1 {
		t.Fatalf("the fleet launched %d instances, want 1", len(launched))
	}
	id := aws.ToString(launched[0].InstanceId)
	if !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "zone") {
		t.Errorf("the error %q does not name the instance %s and its missing zone", err, id)
	}
	listed, err := p.List(t.Context())
	if err != nil || len(listed) != 1 || listed[0].ID != id {
		t.Errorf("List = %v, %v; want the launched instance %s, for the garbage collector", listed, err, id)
	}
	// A retry finds the same instance by its NodeClaim tag, still without
	// a zone, and launches no other.
	if inst, err := p.Create(t.Context(), request("nowhere", "on-demand")); err == nil {
		t.Errorf("the retried Create succeeded with %+v and no zone", inst)
	}
	if n := len(e.Instances()); n != 1 {
		t.Errorf("the retried Create left %d instances, want the first alone", n)
	}
}

// runOther launches an instance straight through EC2 with tags, as another
// cluster or a user would, and returns its ID.
func runOther(t *testing.T, e *fake.EC2, tags map[string]string) string {
	t.Helper()
	out, err := e.CreateFleet(t.Context(), &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("karpenter.k8s.aws/1"), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", AvailabilityZone: aws.String("zone-a"), SubnetId: aws.String("subnet-zone-a")}},
		}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: ec2Tags(tags)}},
	})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("launching: %v", err)
	}
	return out.Instances[0].InstanceIds[0]
}

func running(t *testing.T, e *fake.EC2, id string) bool {
	t.Helper()
	for _, inst := range e.Instances() {
		if aws.ToString(inst.InstanceId) == id {
			return inst.State.Name == ec2types.InstanceStateNameRunning
		}
	}
	return false
}

// When DescribeInstances ignores its filters, List, the NodeClaim lookup
// and Delete still keep to the cluster's own live instances: another
// cluster's (even one tagged with the same NodeClaim name), a user's
// untagged one and a terminated one are neither listed, adopted nor
// terminated.
func TestInstancesOfOthersAreNeverListedAdoptedOrTerminated(t *testing.T) {
	ctx := t.Context()
	e := newFakeEC2(t)
	e.SetTerminationDelay(0)
	e.IgnoreFilters = true
	p := NewProvider(e, clock.RealClock{}, "test-cluster", nil)
	other := runOther(t, e, map[string]string{
		TagNodePool: "default", TagNodeClass: "default", TagEKSClusterName: "other-cluster",
		ClusterTagKey("other-cluster"): "owned", TagNodeClaim: "same-name",
	})
	users := runOther(t, e, map[string]string{"Name": "bastion"})
	gone, err := p.Create(ctx, request("gone", "on-demand"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}

	ours, err := p.Create(ctx, request("same-name", "on-demand"))
	if err != nil {
		t.Fatal(err)
	}
	if ours.ID == other {
		t.Fatalf("Create adopted the other cluster's instance %s tagged with the same NodeClaim name", other)
	}
	listed, err := p.List(ctx)
	if err != nil || len(listed) != 1 || listed[0].ID != ours.ID {
		var ids []string
		for _, inst := range listed {
			ids = append(ids, inst.ID)
		}
		t.Errorf("List = %v, %v; want only %s", ids, err, ours.ID)
	}
	if _, err := p.Get(ctx, gone.ID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of the terminated instance returned %v, want NodeClaimNotFound", err)
	}
	for name, id := range map[string]string{"other cluster's": other, "user's": users} {
		if err := p.Delete(ctx, id); !cloudprovider.IsNodeClaimNotFoundError(err) {
			t.Errorf("Delete of the %s instance returned %v, want NodeClaimNotFound (not ours)", name, err)
		}
		if !running(t, e, id) {
			t.Errorf("the %s instance %s was terminated", name, id)
		}
	}
	if !running(t, e, ours.ID) {
		t.Errorf("our instance %s is not running", ours.ID)
	}
}
