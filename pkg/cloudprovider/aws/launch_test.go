package aws_test

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/subnet"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

func tagMap(tags []ec2types.Tag) map[string]string {
	out := map[string]string{}
	for _, t := range tags {
		out[awssdk.ToString(t.Key)] = awssdk.ToString(t.Value)
	}
	return out
}

func withRequirement(nc *karpv1.NodeClaim, key string, values ...string) *karpv1.NodeClaim {
	nc.Spec.Requirements = append(nc.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values})
	return nc
}

func TestCreateFleetRequest(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	tests := map[string]struct {
		capacityType string
	}{
		karpv1.CapacityTypeSpot:     {capacityType: karpv1.CapacityTypeSpot},
		karpv1.CapacityTypeOnDemand: {capacityType: karpv1.CapacityTypeOnDemand},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			nc := withRequirement(newNodeClaim("fleet", nodeClass.Name), karpv1.CapacityTypeLabelKey, tc.capacityType)
			types, err := w.Provider.GetInstanceTypes(ctx, nodePool(nodeClass.Name))
			if err != nil {
				t.Fatal(err)
			}
			candidates := cloudprovider.LaunchCandidates(types, nc, nil)
			created, err := w.Provider.Create(ctx, nc)
			if err != nil {
				t.Fatal(err)
			}
			inputs := w.EC2.CreateFleetInputs()
			if len(inputs) != 1 {
				t.Fatalf("%d CreateFleet calls, want 1", len(inputs))
			}
			in := inputs[0]
			// 1. Type, capacity type and allocation strategy.
			if in.Type != ec2types.FleetTypeInstant || string(in.TargetCapacitySpecification.DefaultTargetCapacityType) != tc.capacityType {
				t.Errorf("fleet type %s capacity %s, want instant %s", in.Type, in.TargetCapacitySpecification.DefaultTargetCapacityType, tc.capacityType)
			}
			switch tc.capacityType {
			case karpv1.CapacityTypeSpot:
				if in.SpotOptions == nil || in.SpotOptions.AllocationStrategy != ec2types.SpotAllocationStrategyPriceCapacityOptimized || in.OnDemandOptions != nil {
					t.Errorf("spot fleet options %+v / %+v, want price-capacity-optimized only", in.SpotOptions, in.OnDemandOptions)
				}
			default:
				if in.OnDemandOptions == nil || in.OnDemandOptions.AllocationStrategy != ec2types.FleetOnDemandAllocationStrategyLowestPrice || in.SpotOptions != nil {
					t.Errorf("on-demand fleet options %+v / %+v, want lowest-price only", in.OnDemandOptions, in.SpotOptions)
				}
			}
			// 2. Overrides: candidate offerings, each zone with its subnet,
			// at most 60 types, the cheapest candidate among them.
			allowed := map[string]bool{}
			for _, c := range candidates {
				allowed[c.InstanceType.Name+"/"+c.Offering.Zone] = true
			}
			subnets := map[string]string{}
			for _, s := range nodeClass.Status.Subnets {
				subnets[s.Zone] = s.ID
			}
			distinct := map[string]bool{}
			for _, cfg := range in.LaunchTemplateConfigs {
				if !strings.HasPrefix(awssdk.ToString(cfg.LaunchTemplateSpecification.LaunchTemplateName), "karpenter.k8s.aws/") {
					t.Errorf("launch template %s is not named karpenter.k8s.aws/<hash>", awssdk.ToString(cfg.LaunchTemplateSpecification.LaunchTemplateName))
				}
				for _, o := range cfg.Overrides {
					key := string(o.InstanceType) + "/" + awssdk.ToString(o.AvailabilityZone)
					if !allowed[key] {
						t.Errorf("override %s is not a candidate", key)
					}
					if awssdk.ToString(o.SubnetId) != subnets[awssdk.ToString(o.AvailabilityZone)] {
						t.Errorf("override %s uses subnet %s, want the zone's %s", key, awssdk.ToString(o.SubnetId), subnets[awssdk.ToString(o.AvailabilityZone)])
					}
					distinct[string(o.InstanceType)] = true
				}
			}
			if len(distinct) == 0 || len(distinct) > 60 {
				t.Errorf("fleet offers %d instance types, want 1..60", len(distinct))
			}
			if !distinct[candidates[0].InstanceType.Name] {
				t.Errorf("the cheapest candidate %s is not offered", candidates[0].Key())
			}
			if created.Labels[corev1.LabelInstanceTypeStable] != candidates[0].InstanceType.Name || created.Labels[corev1.LabelTopologyZone] != candidates[0].Offering.Zone {
				t.Errorf("launched %s/%s, want the cheapest candidate %s", created.Labels[corev1.LabelInstanceTypeStable], created.Labels[corev1.LabelTopologyZone], candidates[0].Key())
			}
			// 3. Tags on the instance, its volumes and the fleet.
			want := map[string]string{
				"kubernetes.io/cluster/" + clusterName: "owned",
				awsv1.TagEKSClusterName:                clusterName,
				awsv1.TagNodePool:                      "default",
				awsv1.TagNodeClass:                     nodeClass.Name,
				"team":                                 "platform",
			}
			kinds := map[ec2types.ResourceType]bool{}
			for _, spec := range in.TagSpecifications {
				kinds[spec.ResourceType] = true
				got := tagMap(spec.Tags)
				for k, v := range want {
					if got[k] != v {
						t.Errorf("%s tag %s = %q, want %q", spec.ResourceType, k, got[k], v)
					}
				}
			}
			for _, kind := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet} {
				if !kinds[kind] {
					t.Errorf("no tags for %s", kind)
				}
			}
			instances := w.EC2.Instances()
			if len(instances) != 1 || tagMap(instances[0].Tags)[awsv1.TagNodeClaim] != nc.Name {
				t.Errorf("the instance is not tagged %s=%s: %v", awsv1.TagNodeClaim, nc.Name, instances)
			}
			// 4. The launch template: AMI, security groups, user data, IMDS.
			name := awssdk.ToString(in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName)
			data, ok := w.EC2.LaunchTemplateData(name)
			if !ok {
				t.Fatalf("launch template %s does not exist", name)
			}
			userData, err := base64.StdEncoding.DecodeString(awssdk.ToString(data.UserData))
			if err != nil || !strings.Contains(string(userData), "apiServerEndpoint: https://test-cluster.example") {
				t.Errorf("user data is not the AL2023 NodeConfig for the cluster (%v):\n%s", err, userData)
			}
			if groups := data.NetworkInterfaces[0].Groups; len(groups) != 1 || groups[0] != "sg-test1" {
				t.Errorf("ENI security groups %v, want [sg-test1]", groups)
			}
			if md := data.MetadataOptions; md.HttpTokens != "required" || awssdk.ToInt32(md.HttpPutResponseHopLimit) != 1 {
				t.Errorf("metadata options %+v, want IMDSv2 required with hop limit 1", md)
			}
			if awssdk.ToString(data.IamInstanceProfile.Name) != "test-profile" {
				t.Errorf("instance profile %v, want test-profile", data.IamInstanceProfile)
			}
			if created.Annotations[awsv1.AnnotationEC2NodeClassHash] != nodeClass.Hash() || created.Annotations[awsv1.AnnotationInstanceProfile] != "test-profile" {
				t.Errorf("annotations %v lack the EC2NodeClass hash or instance profile", created.Annotations)
			}
			if !strings.HasPrefix(created.Status.ProviderID, "aws:///"+created.Labels[corev1.LabelTopologyZone]+"/i-") {
				t.Errorf("providerID %q is not aws:///<zone>/<instance-id>", created.Status.ProviderID)
			}
		})
	}
}

func TestCreateBatchesABurst(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	// Warm-up: the instance types are read once at start, and the first
	// launch creates the launch template and fills the caches the burst
	// then reads, so the burst's launches reach the batcher together.
	if _, err := w.Provider.GetInstanceTypes(ctx, nodePool(nodeClass.Name)); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Provider.Create(ctx, newNodeClaim("burst-warm-up", nodeClass.Name)); err != nil {
		t.Fatal(err)
	}
	w.EC2.ResetCalls()
	before := len(w.EC2.CreateFleetInputs())
	const n = 30
	test.DistinctConcurrently(t, n, func(i int) (string, error) {
		created, err := w.Provider.Create(ctx, newNodeClaim(fmt.Sprintf("burst-%d", i), nodeClass.Name))
		if err != nil {
			return "", err
		}
		return created.Status.ProviderID, nil
	})
	// Alike requests share a call; the 35 ms window may split a burst on a
	// loaded machine (9 calls for 30 once, with the integration tier
	// beside the e2e tier on two cores), but never into anywhere near one
	// call per NodeClaim.
	total := int32(0)
	for _, in := range w.EC2.CreateFleetInputs()[before:] {
		total += awssdk.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity)
	}
	if calls := w.EC2.Calls("CreateFleet"); calls < 1 || calls > n/3 || total != n {
		t.Errorf("%d alike NodeClaims made %d CreateFleet calls for %d instances, want at most %d calls for %d", n, calls, total, n/3, n)
	}
	if calls := w.EC2.Calls("DescribeInstanceTypes"); calls != 0 {
		t.Errorf("%d DescribeInstanceTypes calls after warm-up, want 0", calls)
	}
}

func TestCreateFallsBackAfterCapacityErrors(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	nc := withRequirement(newNodeClaim("fallback", nodeClass.Name), karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand)
	types, err := w.Provider.GetInstanceTypes(ctx, nodePool(nodeClass.Name))
	if err != nil {
		t.Fatal(err)
	}
	cheapest := cloudprovider.LaunchCandidates(types, nc, nil)[0]
	pool := fake.CapacityPool{InstanceType: cheapest.InstanceType.Name, Zone: cheapest.Offering.Zone, CapacityType: karpv1.CapacityTypeOnDemand}
	w.EC2.SetCapacity(pool, 0, fake.CodeInsufficientInstanceCapacity)

	created, err := w.Provider.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	got := cloudprovider.OfferingKey{InstanceType: created.Labels[corev1.LabelInstanceTypeStable], Zone: created.Labels[corev1.LabelTopologyZone], CapacityType: karpv1.CapacityTypeOnDemand}
	if got == cheapest.Key() {
		t.Fatalf("launched the exhausted pool %s", got)
	}
	// The refused offering is unavailable now, and the next best is what
	// the core ranks first.
	types, err = w.Provider.GetInstanceTypes(ctx, nodePool(nodeClass.Name))
	if err != nil {
		t.Fatal(err)
	}
	next := cloudprovider.LaunchCandidates(types, nc, nil)
	if next[0].Key() == cheapest.Key() {
		t.Errorf("%s is still offered after EC2 refused it", cheapest.Key())
	}
	if next[0].Key() != got {
		t.Errorf("launched %s, want the next cheapest %s", got, next[0].Key())
	}

	// With no on-demand capacity anywhere, Create says insufficient capacity.
	for _, it := range types {
		for _, z := range zones {
			w.EC2.SetCapacity(fake.CapacityPool{InstanceType: it.Name, Zone: z.Name, CapacityType: karpv1.CapacityTypeOnDemand}, 0, fake.CodeUnfulfillableCapacity)
		}
	}
	_, err = w.Provider.Create(ctx, withRequirement(newNodeClaim("exhausted", nodeClass.Name), karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("Create with every pool exhausted returned %v, want an InsufficientCapacityError", err)
	}
}

func TestNoSecondInstanceAfterRestart(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	nc := newNodeClaim("restart", nodeClass.Name)
	first, err := w.Provider.Create(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	// The process restarts before the NodeClaim records the providerID;
	// the new process retries Create for the same NodeClaim.
	again, err := w.Restart(t).Create(ctx, nc.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if again.Status.ProviderID != first.Status.ProviderID {
		t.Errorf("after a restart Create returned %s, want %s", again.Status.ProviderID, first.Status.ProviderID)
	}
	if calls, n := w.EC2.Calls("CreateFleet"), len(w.EC2.Instances()); calls != 1 || n != 1 {
		t.Errorf("%d CreateFleet calls and %d instances, want 1 and 1", calls, n)
	}
}

func TestCreateNeedsAReadyNodeClass(t *testing.T) {
	ctx := t.Context()
	w := newWorld(t)
	notReady := createNodeClass(t, newNodeClass(nil), false)
	if _, err := w.Provider.Create(ctx, newNodeClaim("not-ready", notReady.Name)); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Errorf("Create on a not-ready EC2NodeClass returned %v, want a NodeClassNotReadyError", err)
	}
	if _, err := w.Provider.Create(ctx, newNodeClaim("missing", "no-such-class")); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("Create on a missing EC2NodeClass returned %v, want an InsufficientCapacityError", err)
	}
	if w.EC2.Calls("CreateFleet") != 0 {
		t.Error("CreateFleet was called without a ready EC2NodeClass")
	}
}

func TestListAndDelete(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	a, err := w.Provider.Create(ctx, newNodeClaim("a", nodeClass.Name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := w.Provider.Create(ctx, newNodeClaim("b", nodeClass.Name))
	if err != nil {
		t.Fatal(err)
	}
	// A fresh process lists both, hydrated from their tags.
	listed, err := w.Restart(t).List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*karpv1.NodeClaim{}
	for _, nc := range listed {
		byID[nc.Status.ProviderID] = nc
	}
	for _, want := range []*karpv1.NodeClaim{a, b} {
		got := byID[want.Status.ProviderID]
		if got == nil {
			t.Fatalf("List does not show %s", want.Status.ProviderID)
		}
		if got.Name != want.Name || got.Labels[karpv1.NodePoolLabelKey] != "default" || got.Labels[corev1.LabelInstanceTypeStable] != want.Labels[corev1.LabelInstanceTypeStable] {
			t.Errorf("List hydrated %s as %s %v, want %s with its nodepool and type", want.Status.ProviderID, got.Name, got.Labels, want.Name)
		}
		if got.Status.Allocatable.Cpu().IsZero() {
			t.Errorf("List gave %s no allocatable", want.Status.ProviderID)
		}
	}
	if err := w.Provider.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := w.Provider.Delete(ctx, a); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Delete of a terminated instance returned %v, want NodeClaimNotFound", err)
	}
	listed, err = w.Provider.List(ctx)
	if err != nil || len(listed) != 1 || listed[0].Status.ProviderID != b.Status.ProviderID {
		t.Errorf("after deleting a, List = %d NodeClaims (%v), want only b", len(listed), err)
	}
}

func TestCreateRecreatesALostLaunchTemplate(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	nc := withRequirement(newNodeClaim("first", nodeClass.Name), karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand)
	if _, err := w.Provider.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	// Someone deletes karp's launch templates behind its back.
	for _, in := range w.EC2.CreateFleetInputs() {
		for _, cfg := range in.LaunchTemplateConfigs {
			if _, err := w.EC2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: cfg.LaunchTemplateSpecification.LaunchTemplateName}); err != nil {
				t.Fatal(err)
			}
		}
	}
	created, err := w.Provider.Create(ctx, withRequirement(newNodeClaim("second", nodeClass.Name), karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand))
	if err != nil {
		t.Fatalf("Create after the launch templates vanished: %v", err)
	}
	if created.Status.ProviderID == "" || w.EC2.Calls("CreateFleet") != 3 {
		t.Errorf("got %q after %d CreateFleet calls, want a launch on the second try (3 calls in all)", created.Status.ProviderID, w.EC2.Calls("CreateFleet"))
	}
}

func TestCreateFleetAPIErrorsAreClassified(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	w.EC2.FailNext("CreateFleet", 1, &smithy.GenericAPIError{Code: "UnauthorizedOperation", Message: "You are not authorized to perform this operation."})
	_, err := w.Provider.Create(ctx, newNodeClaim("denied", nodeClass.Name))
	createErr, ok := cloudprovider.AsCreateError(err)
	if !ok || createErr.ConditionReason != "Unauthorized" {
		t.Errorf("Create returned %v, want a CreateError with reason Unauthorized", err)
	}
	w.EC2.FailNext("CreateFleet", 1, fake.Throttling("CreateFleet"))
	_, err = w.Provider.Create(ctx, newNodeClaim("throttled", nodeClass.Name))
	if createErr, ok := cloudprovider.AsCreateError(err); !ok || createErr.ConditionReason != "RequestLimitExceeded" {
		t.Errorf("Create returned %v, want a CreateError with reason RequestLimitExceeded", err)
	}
	if len(w.EC2.Instances()) != 0 {
		t.Errorf("%d instances launched by failed fleets", len(w.EC2.Instances()))
	}
}

func TestLaunchSubnetHasTheMostFreeAddresses(t *testing.T) {
	ctx := t.Context()
	tags := map[string]string{"karpenter.sh/discovery": clusterName}
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	// Two subnets in the first zone instead of one.
	nodeClass.Status.Subnets = []awsv1.Subnet{{ID: "subnet-small", Zone: zones[0].Name, ZoneID: zones[0].ID}, {ID: "subnet-big", Zone: zones[0].Name, ZoneID: zones[0].ID}}
	if err := env.Client.Status().Update(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	w.EC2.AddSubnets(fake.NewSubnet("subnet-small", zones[0].Name, zones[0].ID, 10, tags), fake.NewSubnet("subnet-big", zones[0].Name, zones[0].ID, 500, tags))
	subnets := subnet.NewProvider(w.EC2, clock.RealClock{}, time.Minute)
	if _, err := subnets.List(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	provider := w.Provider.WithSubnets(subnets)
	launchSubnet := func(name string) string {
		t.Helper()
		before := len(w.EC2.CreateFleetInputs())
		if _, err := provider.Create(ctx, newNodeClaim(name, nodeClass.Name)); err != nil {
			t.Fatal(err)
		}
		in := w.EC2.CreateFleetInputs()[before]
		return awssdk.ToString(in.LaunchTemplateConfigs[0].Overrides[0].SubnetId)
	}
	if got := launchSubnet("most-free"); got != "subnet-big" {
		t.Errorf("launched into %s, want subnet-big (500 free addresses against 10)", got)
	}
	w.Unavailable.MarkSubnetUnavailable(ctx, "InsufficientFreeAddressesInSubnet", "subnet-big")
	if got := launchSubnet("big-is-full"); got != "subnet-small" {
		t.Errorf("with subnet-big out of addresses, launched into %s, want subnet-small", got)
	}
}

func TestFleetContext(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(func(nc *awsv1.EC2NodeClass) { nc.Spec.Context = awssdk.String("c-0123") }), true)
	w := newWorld(t)
	if _, err := w.Provider.Create(ctx, newNodeClaim("context", nodeClass.Name)); err != nil {
		t.Fatal(err)
	}
	relaxed := newNodeClaim("relaxed", nodeClass.Name)
	relaxed.Annotations = map[string]string{karpv1.NodeClaimMinValuesRelaxedAnnotationKey: "true"}
	if _, err := w.Provider.Create(ctx, relaxed); err != nil {
		t.Fatal(err)
	}
	var contexts []string
	for _, in := range w.EC2.CreateFleetInputs() {
		contexts = append(contexts, awssdk.ToString(in.Context))
	}
	if strings.Join(contexts, ",") != "c-0123," {
		t.Errorf("fleet contexts %q, want c-0123 then none for the relaxed NodeClaim", contexts)
	}
}
