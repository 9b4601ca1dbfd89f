package instance

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

type marks struct {
	mu   sync.Mutex
	keys []string
}

func (m *marks) MarkUnavailable(_ context.Context, reason, instanceType, zone, capacityType string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys = append(m.keys, fmt.Sprintf("%s/%s/%s:%s", instanceType, zone, capacityType, reason))
}

func (m *marks) MarkUnavailableInPlacementGroup(_ context.Context, reason, instanceType, zone, capacityType, groupID, partition string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys = append(m.keys, fmt.Sprintf("%s/%s/%s@%s/%s:%s", instanceType, zone, capacityType, groupID, partition, reason))
}

func (m *marks) MarkCapacityTypeUnavailable(_ context.Context, reason, capacityType string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys = append(m.keys, fmt.Sprintf("%s:%s", capacityType, reason))
}

func (m *marks) MarkSubnetUnavailable(_ context.Context, reason, subnetID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys = append(m.keys, fmt.Sprintf("%s:%s", subnetID, reason))
}

func newFakeEC2(t *testing.T) *fake.EC2 {
	t.Helper()
	e := fake.NewEC2()
	if _, err := e.CreateLaunchTemplate(t.Context(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("karpenter.k8s.aws/1"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")},
	}); err != nil {
		t.Fatal(err)
	}
	for _, zone := range []string{"zone-a", "zone-b"} {
		e.SetPrice(fake.CapacityPool{InstanceType: "c5.large", Zone: zone, CapacityType: "on-demand"}, 0.085)
		e.SetPrice(fake.CapacityPool{InstanceType: "m5.large", Zone: zone, CapacityType: "on-demand"}, 0.096)
	}
	return e
}

func request(name string, capacityType string) LaunchRequest {
	var overrides []Override
	for _, it := range []string{"c5.large", "m5.large"} {
		for _, zone := range []string{"zone-a", "zone-b"} {
			overrides = append(overrides, Override{InstanceType: it, Zone: zone, SubnetID: "subnet-" + zone, ImageID: "ami-1"})
		}
	}
	return LaunchRequest{
		NodeClaimName:   name,
		NodeClaimUID:    types.UID("uid-" + name),
		CapacityType:    capacityType,
		LaunchTemplates: []LaunchTemplateConfig{{Name: "karpenter.k8s.aws/1", Overrides: overrides}},
		Tags: map[string]string{
			TagNodePool: "default", TagNodeClass: "default", TagEKSClusterName: "test-cluster",
			ClusterTagKey("test-cluster"): "owned",
		},
	}
}

func TestCreateBatchesABurstIntoOneFleet(t *testing.T) {
	e := newFakeEC2(t)
	p := NewProvider(e, clock.RealClock{}, "test-cluster", nil)
	const n = 20
	test.DistinctConcurrently(t, n, func(i int) (string, error) {
		inst, err := p.Create(t.Context(), request(fmt.Sprintf("nc-%d", i), "on-demand"))
		if err != nil {
			return "", err
		}
		return inst.ID, nil
	})
	// Windows may split a burst on a loaded machine, but never into one
	// call per NodeClaim.
	if calls := e.Calls("CreateFleet"); calls < 1 || calls > n/5 {
		t.Errorf("%d NodeClaims made %d CreateFleet calls, want at most n/5", n, calls)
	}
	total := int32(0)
	for _, in := range e.CreateFleetInputs() {
		total += aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity)
		if in.OnDemandOptions == nil || in.OnDemandOptions.AllocationStrategy != ec2types.FleetOnDemandAllocationStrategyLowestPrice {
			t.Errorf("on-demand fleet without lowest-price: %+v", in.OnDemandOptions)
		}
		if aws.ToString(in.ClientToken) == "" {
			t.Error("fleet request without a client token")
		}
	}
	if total != n {
		t.Errorf("fleets asked for %d instances, want %d", total, n)
	}
	for _, inst := range e.Instances() {
		tags := map[string]string{}
		for _, tag := range inst.Tags {
			tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
		}
		if tags[TagNodeClaim] == "" || tags[TagNodePool] != "default" || tags[ClusterTagKey("test-cluster")] != "owned" {
			t.Errorf("instance %s tags %v lack the nodeclaim, nodepool or cluster tag", aws.ToString(inst.InstanceId), tags)
		}
	}
}

func TestCreateMarksRefusedOfferingsAndFallsBack(t *testing.T) {
	e := newFakeEC2(t)
	m := &marks{}
	p := NewProvider(e, clock.RealClock{}, "test-cluster", m)
	e.SetCapacity(fake.CapacityPool{InstanceType: "c5.large", Zone: "zone-a", CapacityType: "on-demand"}, 0, "")
	failures := LaunchFailuresTotal.WithLabelValues("zone-a", "usw2-az1", "on-demand", "InsufficientInstanceCapacity")
	before := testutil.ToFloat64(failures)
	req := request("fallback", "on-demand")
	req.ZoneIDs = map[string]string{"zone-a": "usw2-az1", "zone-b": "usw2-az2"}
	inst, err := p.Create(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Type != "c5.large" || inst.Zone != "zone-b" {
		t.Errorf("launched %s in %s, want the next cheapest c5.large in zone-b", inst.Type, inst.Zone)
	}
	if len(m.keys) != 1 || m.keys[0] != "c5.large/zone-a/on-demand:InsufficientInstanceCapacity" {
		t.Errorf("marked %v, want c5.large/zone-a/on-demand", m.keys)
	}
	if got := testutil.ToFloat64(failures) - before; got != 1 {
		t.Errorf("launch failures for zone-a on-demand InsufficientInstanceCapacity rose by %v, want 1", got)
	}

	for _, it := range []string{"c5.large", "m5.large"} {
		for _, zone := range []string{"zone-a", "zone-b"} {
			e.SetCapacity(fake.CapacityPool{InstanceType: it, Zone: zone, CapacityType: "on-demand"}, 0, fake.CodeUnfulfillableCapacity)
		}
	}
	_, err = p.Create(t.Context(), request("none-left", "on-demand"))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("with every pool exhausted Create returned %v, want an InsufficientCapacityError", err)
	}
}

// A launch into a placement group marks what EC2 refused inside the group
// (and the partition it targeted) only; a spread group's per-zone limit
// takes every type the request offered in that zone out of the group.
func TestCreateScopesRefusalsToThePlacementGroup(t *testing.T) {
	e := newFakeEC2(t)
	m := &marks{}
	p := NewProvider(e, clock.RealClock{}, "test-cluster", m)
	e.SetCapacity(fake.CapacityPool{InstanceType: "c5.large", Zone: "zone-a", CapacityType: "on-demand"}, 0, "")
	req := request("partitioned", "on-demand")
	req.PlacementGroupID, req.PlacementPartition = "pg-1", "2"
	if _, err := p.Create(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if want := []string{"c5.large/zone-a/on-demand@pg-1/2:InsufficientInstanceCapacity"}; !slices.Equal(m.keys, want) {
		t.Errorf("marked %v, want %v", m.keys, want)
	}

	e.SetCapacity(fake.CapacityPool{InstanceType: "c5.large", Zone: "zone-a", CapacityType: "on-demand"}, -1, "")
	e.AddPlacementGroups(fake.NewPlacementGroup("pg-s", "spread", ec2types.PlacementStrategySpread, 0))
	if _, err := e.CreateLaunchTemplate(t.Context(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("karpenter.k8s.aws/spread"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1"),
			Placement: &ec2types.LaunchTemplatePlacementRequest{GroupId: aws.String("pg-s")}},
	}); err != nil {
		t.Fatal(err)
	}
	spread := func(name string) LaunchRequest {
		r := request(name, "on-demand")
		r.LaunchTemplates[0].Name = "karpenter.k8s.aws/spread"
		r.PlacementGroupID = "pg-s"
		return r
	}
	for i := range 7 { // the cheapest pool, c5.large in zone-a, until the group is full there
		inst, err := p.Create(t.Context(), spread(fmt.Sprintf("spread-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if inst.Zone != "zone-a" {
			t.Fatalf("spread member %d launched in %s, want zone-a", i, inst.Zone)
		}
	}
	m.keys = nil
	inst, err := p.Create(t.Context(), spread("spread-full"))
	if err != nil {
		t.Fatal(err)
	}
	if inst.Zone != "zone-b" {
		t.Errorf("the eighth member launched in %s, want zone-b", inst.Zone)
	}
	want := []string{
		"c5.large/zone-a/on-demand@pg-s/:InsufficientInstanceCapacity",
		"m5.large/zone-a/on-demand@pg-s/:InsufficientInstanceCapacity",
	}
	if got := slices.Sorted(slices.Values(m.keys)); !slices.Equal(got, want) {
		t.Errorf("marked %v, want every type of zone-a in the spread group: %v", got, want)
	}
}

func TestCreateAfterRestartFindsTheInstance(t *testing.T) {
	e := newFakeEC2(t)
	first, err := NewProvider(e, clock.RealClock{}, "test-cluster", nil).Create(t.Context(), request("restart", "on-demand"))
	if err != nil {
		t.Fatal(err)
	}
	// A new process (nothing remembered) retries the same NodeClaim.
	again, err := NewProvider(e, clock.RealClock{}, "test-cluster", nil).Create(t.Context(), request("restart", "on-demand"))
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID || e.Calls("CreateFleet") != 1 {
		t.Errorf("after a restart Create launched %s (first %s) with %d CreateFleet calls, want the same instance and one call",
			again.ID, first.ID, e.Calls("CreateFleet"))
	}
}

func TestCreateTerminatesAnInstanceItCannotTag(t *testing.T) {
	e := newFakeEC2(t)
	p := NewProvider(e, clock.RealClock{}, "test-cluster", nil)
	e.FailNext("CreateTags", 3, fake.Throttling("CreateTags"))
	if _, err := p.Create(t.Context(), request("untagged", "on-demand")); err == nil {
		t.Fatal("Create succeeded without tagging the instance")
	}
	if got, err := p.List(t.Context()); err != nil || len(got) != 0 {
		t.Errorf("List shows %d live instances (err %v), want the untagged one terminated", len(got), err)
	}
}

func TestGetListDelete(t *testing.T) {
	ctx := t.Context()
	e := newFakeEC2(t)
	p := NewProvider(e, clock.RealClock{}, "test-cluster", nil)
	a, err := p.Create(ctx, request("a", "on-demand"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Create(ctx, request("b", "on-demand"))
	if err != nil {
		t.Fatal(err)
	}
	listed, err := p.List(ctx)
	if err != nil || len(listed) != 2 {
		t.Fatalf("List = %d instances, %v; want 2", len(listed), err)
	}
	got, err := p.Get(ctx, a.ID)
	if err != nil || got.Tags[TagNodeClaim] != "a" || got.ProviderID() != a.ProviderID() {
		t.Fatalf("Get(%s) = %+v, %v", a.ID, got, err)
	}
	if _, err := p.Get(ctx, "i-unknown"); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of an unknown ID returned %v, want NodeClaimNotFound", err)
	}
	if err := p.Delete(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, a.ID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second Delete returned %v, want NodeClaimNotFound", err)
	}
	if listed, _ := p.List(ctx); len(listed) != 1 || listed[0].ID != b.ID {
		t.Errorf("after deleting a, List = %v, want only %s", listed, b.ID)
	}
}

func TestParseProviderID(t *testing.T) {
	tests := map[string]struct {
		in   string
		want string
	}{
		"zonal":      {"aws:///us-west-2a/i-0123456789abcdef0", "i-0123456789abcdef0"},
		"not aws":    {"kwok://node-1", ""},
		"no id":      {"aws:///us-west-2a/", ""},
		"not an ID":  {"aws:///us-west-2a/node", ""},
		"round trip": {ProviderID("zone-a", "i-1"), "i-1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseProviderID(tc.in)
			if got != tc.want || (err == nil) != (tc.want != "") {
				t.Errorf("ParseProviderID(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestCreateMarksWholeCapacityTypesAndSubnets(t *testing.T) {
	tests := map[string]struct {
		capacityType string
		code         string
		want         []string
	}{
		"spot without its service-linked role": {"spot", "AuthFailure.ServiceLinkedRoleCreationNotPermitted", []string{"spot:AuthFailure.ServiceLinkedRoleCreationNotPermitted"}},
		"a subnet out of addresses": {"on-demand", "InsufficientFreeAddressesInSubnet", []string{
			"subnet-zone-a:InsufficientFreeAddressesInSubnet", "c5.large/zone-a/on-demand:InsufficientFreeAddressesInSubnet",
			"subnet-zone-b:InsufficientFreeAddressesInSubnet", "c5.large/zone-b/on-demand:InsufficientFreeAddressesInSubnet",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := newFakeEC2(t)
			m := &marks{}
			p := NewProvider(e, clock.RealClock{}, "test-cluster", m)
			req := request("marked", tc.capacityType)
			req.LaunchTemplates[0].Overrides = req.LaunchTemplates[0].Overrides[:2] // c5.large in both zones
			for _, o := range req.LaunchTemplates[0].Overrides {
				e.SetCapacity(fake.CapacityPool{InstanceType: o.InstanceType, Zone: o.Zone, CapacityType: tc.capacityType}, 0, tc.code)
			}
			_, err := p.Create(t.Context(), req)
			if !cloudprovider.IsInsufficientCapacityError(err) {
				t.Errorf("Create returned %v, want an InsufficientCapacityError", err)
			}
			if fmt.Sprint(m.keys) != fmt.Sprint(tc.want) {
				t.Errorf("marked %v, want %v", m.keys, tc.want)
			}
		})
	}
}

func TestConcurrentGetsShareADescribe(t *testing.T) {
	ctx := t.Context()
	e := newFakeEC2(t)
	p := NewProvider(e, clock.RealClock{}, "test-cluster", nil)
	var ids []string
	for i := range 10 {
		inst, err := p.Create(ctx, request(fmt.Sprintf("get-%d", i), "on-demand"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, inst.ID)
	}
	e.ResetCalls()
	ids = append(ids, "i-unknown")
	found := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { _, found[i] = p.Get(ctx, id) })
	}
	wg.Wait()
	for i, err := range found[:10] {
		if err != nil {
			t.Errorf("Get(%s): %v", ids[i], err)
		}
	}
	if !cloudprovider.IsNodeClaimNotFoundError(found[10]) {
		t.Errorf("Get of an unknown ID returned %v, want NodeClaimNotFound", found[10])
	}
	// One batched call, refused for the unknown ID, then one call per ID
	// so each caller learns about its own; never more than that.
	if calls := e.Calls("DescribeInstances"); calls > 1+len(ids) {
		t.Errorf("%d concurrent Gets made %d DescribeInstances calls", len(ids), calls)
	}
	e.ResetCalls()
	for i, id := range ids[:10] {
		wg.Go(func() { _, found[i] = p.Get(ctx, id) })
	}
	wg.Wait()
	if calls := e.Calls("DescribeInstances"); calls > 2 {
		t.Errorf("10 concurrent Gets of known instances made %d DescribeInstances calls, want them batched", calls)
	}
}
