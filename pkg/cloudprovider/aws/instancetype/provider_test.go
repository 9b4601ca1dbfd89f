package instancetype_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

func TestLabels(t *testing.T) {
	e := newEnv(t, nil)
	types, err := e.provider.List(t.Context(), nodeClass())
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		instanceType string
		labels       map[string]string
		absent       []string
		values       map[string][]string
	}{
		"general purpose": {
			instanceType: "m5.large",
			labels: map[string]string{
				"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "topology.kubernetes.io/region": "us-west-2",
				awsv1.LabelInstanceCategory: "m", awsv1.LabelInstanceGeneration: "5", awsv1.LabelInstanceFamily: "m5", awsv1.LabelInstanceSize: "large",
				awsv1.LabelInstanceCPU: "2", awsv1.LabelInstanceMemory: "8192", awsv1.LabelInstanceCPUManufacturer: "intel",
				awsv1.LabelInstanceHypervisor: "nitro", awsv1.LabelInstanceCapabilityFlex: "false", awsv1.LabelNitroSandbox: "false",
				awsv1.LabelInstanceNetworkBandwidth: "750",
			},
			absent: []string{awsv1.LabelInstanceGPUName, awsv1.LabelInstanceGPUCount, awsv1.LabelInstanceAcceleratorName, awsv1.LabelInstanceLocalNVME, awsv1.LabelWindowsBuild, awsv1.LabelCapacityReservationID},
			values: map[string][]string{
				awsv1.LabelTopologyZoneID:      {"usw2-az1", "usw2-az2", "usw2-az3"},
				awsv1.LabelInstanceTenancy:     {"dedicated", "default"},
				corev1.LabelTopologyZone:       {"us-west-2a", "us-west-2b", "us-west-2c"},
				scheduling.LabelCapacityType:   {"on-demand", "spot"},
				corev1.LabelInstanceTypeStable: {"m5.large"},
			},
		},
		"GPU": {
			instanceType: "g5.xlarge",
			labels:       map[string]string{awsv1.LabelInstanceGPUName: "a10g", awsv1.LabelInstanceGPUManufacturer: "nvidia", awsv1.LabelInstanceGPUCount: "1", awsv1.LabelInstanceGPUMemory: "22888"},
			absent:       []string{awsv1.LabelInstanceAcceleratorName},
		},
		"Neuron": {
			instanceType: "trn1.32xlarge",
			labels:       map[string]string{awsv1.LabelInstanceAcceleratorName: "trainium", awsv1.LabelInstanceAcceleratorManufacturer: "aws", awsv1.LabelInstanceAcceleratorCount: "16"},
			absent:       []string{awsv1.LabelInstanceGPUName},
		},
		"flex, Graviton, local NVMe": {
			instanceType: "m7i-flex.large",
			labels:       map[string]string{awsv1.LabelInstanceCapabilityFlex: "true", awsv1.LabelInstanceFamily: "m7i-flex", awsv1.LabelInstanceCategory: "m", awsv1.LabelInstanceGeneration: "7"},
		},
		"arm64 with NVMe": {
			instanceType: "m6gd.large",
			labels:       map[string]string{"kubernetes.io/arch": "arm64", awsv1.LabelInstanceCPUManufacturer: "aws", awsv1.LabelInstanceLocalNVME: "118"},
		},
		"high memory": {
			instanceType: "u-6tb1.56xlarge",
			labels:       map[string]string{awsv1.LabelInstanceCategory: "u", awsv1.LabelInstanceGeneration: "1", awsv1.LabelInstanceFamily: "u-6tb1"},
		},
		"old generation without EBS or network bandwidth data": {
			instanceType: "t2.micro",
			labels:       map[string]string{awsv1.LabelInstanceHypervisor: "xen"},
			absent:       []string{awsv1.LabelInstanceEBSBandwidth, awsv1.LabelInstanceNetworkBandwidth},
		},
	} {
		t.Run(name, func(t *testing.T) {
			it := find(t, types, tc.instanceType)
			labels := it.Requirements.Labels()
			for k, v := range tc.labels {
				if labels[k] != v {
					t.Errorf("%s = %q, want %q", k, labels[k], v)
				}
			}
			for _, k := range tc.absent {
				if r := it.Requirements[k]; r == nil || !r.IsDoesNotExist() {
					t.Errorf("%s = %v, want DoesNotExist", k, r)
				}
			}
			for k, want := range tc.values {
				if got := it.Requirements[k].Values(); strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("%s values = %v, want %v", k, got, want)
				}
			}
		})
	}
}

func TestWindowsLabels(t *testing.T) {
	e := newEnv(t, nil)
	nc := nodeClass()
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
	types, err := e.provider.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	amd := find(t, types, "m5.large").Requirements.Labels()
	if amd["kubernetes.io/os"] != "windows" || amd[awsv1.LabelWindowsBuild] != "10.0.20348" {
		t.Errorf("m5.large os %q build %q, want windows 10.0.20348", amd["kubernetes.io/os"], amd[awsv1.LabelWindowsBuild])
	}
	if r := find(t, types, "m6g.large").Requirements["kubernetes.io/os"]; !r.IsEmpty() {
		t.Errorf("arm64 type under Windows has os %v, want no possible value", r)
	}
}

func TestOfferings(t *testing.T) {
	e := newEnv(t, nil)
	e.ec2.SetSpotPrice("m5.large", zones[0], 0.031, now.Add(-time.Hour))
	e.ec2.SetSpotPrice("m5.large", zones[1], 0.032, now.Add(-time.Hour))
	if err := e.prices.UpdateSpotPricing(t.Context()); err != nil {
		t.Fatal(err)
	}
	nc := nodeClass()
	types, err := e.provider.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	onDemand, _ := e.prices.OnDemandPrice("m5.large")
	got := offeringsOf(find(t, types, "m5.large"))
	want := map[string]offering{
		"us-west-2a/on-demand": {onDemand, true}, "us-west-2b/on-demand": {onDemand, true}, "us-west-2c/on-demand": {onDemand, true},
		"us-west-2a/spot": {0.031, true}, "us-west-2b/spot": {0.032, true},
		"us-west-2c/spot": {0, false}, // no spot price there
	}
	diffOfferings(t, "m5.large", want, got)

	// An insufficient-capacity mark makes the offering unavailable: the
	// marked type is rebuilt, the others are shared.
	c5 := find(t, types, "c5.large")
	e.unavailable.MarkUnavailable(t.Context(), "InsufficientInstanceCapacity", "m5.large", "us-west-2a", "spot")
	types, err = e.provider.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if find(t, types, "c5.large") != c5 {
		t.Error("a mark on m5.large rebuilt c5.large")
	}
	it := find(t, types, "m5.large")
	want["us-west-2a/spot"] = offering{0.031, false}
	diffOfferings(t, "m5.large after ICE", want, offeringsOf(it))
	if r := it.Requirements[corev1.LabelTopologyZone]; !r.Has("us-west-2a") {
		t.Error("us-west-2a left the zone requirement though its on-demand offering is available")
	}

	// Spot as a whole, then every subnet of a zone.
	e.unavailable.MarkCapacityTypeUnavailable(t.Context(), "AuthFailure.ServiceLinkedRoleCreationNotPermitted", "spot")
	e.unavailable.MarkSubnetUnavailable(t.Context(), "InsufficientFreeAddressesInSubnet", nc.Status.Subnets[2].ID)
	types, err = e.provider.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	it = find(t, types, "m5.large")
	want["us-west-2b/spot"] = offering{0.032, false}
	want["us-west-2c/on-demand"] = offering{onDemand, false}
	diffOfferings(t, "m5.large after spot and subnet marks", want, offeringsOf(it))
	if got := it.Requirements[scheduling.LabelCapacityType].Values(); strings.Join(got, ",") != "on-demand" {
		t.Errorf("capacity types = %v, want on-demand only", got)
	}

	// After the TTL everything is available again.
	e.clock.Step(3 * time.Minute)
	types, err = e.provider.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if got := offeringsOf(find(t, types, "m5.large")); !got["us-west-2a/spot"].available || !got["us-west-2c/on-demand"].available {
		t.Errorf("offerings still unavailable after the TTL: %v", got)
	}
}

func TestReservedOfferings(t *testing.T) {
	e := newEnv(t, nil)
	nc := nodeClass()
	nc.Status.CapacityReservations = []awsv1.CapacityReservation{
		{ID: "cr-active", InstanceType: "m5.large", AvailabilityZone: "us-west-2a", InstanceMatchCriteria: "targeted", OwnerID: fake.AccountID, ReservationType: "default", State: "active"},
		{ID: "cr-expiring", InstanceType: "m5.large", AvailabilityZone: "us-west-2b", InstanceMatchCriteria: "targeted", OwnerID: fake.AccountID, ReservationType: "capacity-block", State: "expiring"},
	}
	types, err := e.provider.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	it := find(t, types, "m5.large")
	onDemand, _ := e.prices.OnDemandPrice("m5.large")
	var reserved []*cloudprovider.Offering
	for _, o := range it.Offerings {
		if o.CapacityType == scheduling.CapacityTypeRsv {
			reserved = append(reserved, o)
		}
	}
	if len(reserved) != 2 {
		t.Fatalf("%d reserved offerings, want 2", len(reserved))
	}
	for _, o := range reserved {
		wantAvailable := o.ReservationID == "cr-active"
		if o.Available != wantAvailable || o.Price != onDemand/10_000_000 {
			t.Errorf("%s: available %v price %v, want %v and %v", o.ReservationID, o.Available, o.Price, wantAvailable, onDemand/10_000_000)
		}
	}
	cheapest, ok := it.CheapestOffering(scheduling.NewRequirements())
	if !ok || cheapest.ReservationID != "cr-active" {
		t.Errorf("cheapest offering = %+v, want the active reservation", cheapest)
	}
	if r := it.Requirements[awsv1.LabelCapacityReservationID]; r != nil {
		t.Errorf("a type with reservations constrains %s: %v", awsv1.LabelCapacityReservationID, r)
	}
	if r := find(t, types, "c5.large").Requirements[awsv1.LabelCapacityReservationID]; r == nil || !r.IsDoesNotExist() {
		t.Errorf("a type without reservations has %s %v, want DoesNotExist", awsv1.LabelCapacityReservationID, r)
	}
}

func TestCompatibility(t *testing.T) {
	e := newEnv(t, nil)
	for family, wantAvailable := range map[string]bool{"al2023@latest": false, "al2@latest": true} {
		nc := nodeClass()
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: family}}
		types, err := e.provider.List(t.Context(), nc)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range find(t, types, "a1.large").Offerings {
			if o.Available != wantAvailable {
				t.Errorf("%s: a1.large offering %s/%s available = %v, want %v", family, o.Zone, o.CapacityType, o.Available, wantAvailable)
			}
		}
	}
	nc := nodeClass()
	nc.Spec.NetworkInterfaces = []*awsv1.NetworkInterface{
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
		{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
	}
	types, err := e.provider.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := find(t, types, "p4d.24xlarge").CheapestOffering(scheduling.NewRequirements()); !ok {
		t.Error("p4d.24xlarge (4 network cards, 4 EFA) cannot take an EFA-only interface on card 1")
	}
	if _, ok := find(t, types, "m5.large").CheapestOffering(scheduling.NewRequirements()); ok {
		t.Error("m5.large (one network card, no EFA) is available for an interface on card 1")
	}
}

func TestCachingAndRefresh(t *testing.T) {
	e := newEnv(t, nil)
	nc := nodeClass()
	first, err := e.provider.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	describes, offerings := e.ec2.Calls("DescribeInstanceTypes"), e.ec2.Calls("DescribeInstanceTypeOfferings")
	if describes != 14 || offerings != 5 {
		t.Errorf("Update paged %d DescribeInstanceTypes and %d DescribeInstanceTypeOfferings calls, want 14 (1,364 types by 100) and 5 (4,092 offerings by 1,000)", describes, offerings)
	}
	second, err := e.provider.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if &first[0] != &second[0] {
		t.Error("a second List rebuilt the instance types")
	}
	if e.ec2.Calls("DescribeInstanceTypes") != describes || e.ec2.Calls("DescribeInstanceTypeOfferings") != offerings {
		t.Error("List called EC2")
	}

	// A class with another shape gets its own types.
	other := nodeClass()
	other.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr(int32(50))}
	otherTypes, err := e.provider.List(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	if got := find(t, otherTypes, "m5.large").Capacity.Pods().Value(); got != 50 {
		t.Errorf("pods = %d under maxPods 50", got)
	}

	// A refresh that finds a type gone, and an offering gone, rebuilds.
	e.ec2.RemoveInstanceTypes("c5.large")
	e.ec2.RemoveInstanceTypeOffering("m5.large", "us-west-2c")
	if err := e.provider.Update(t.Context()); err != nil {
		t.Fatal(err)
	}
	third, err := e.provider.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range third {
		if it.Name == "c5.large" {
			t.Error("c5.large listed after EC2 stopped listing it")
		}
	}
	if z := find(t, third, "m5.large").Requirements[corev1.LabelTopologyZone].Values(); strings.Join(z, ",") != "us-west-2a,us-west-2b" {
		t.Errorf("m5.large zones = %v after its us-west-2c offering went", z)
	}

	// A failed refresh keeps the data.
	e.ec2.FailNext("DescribeInstanceTypes", 1, fake.Throttling("DescribeInstanceTypes"))
	if err := e.provider.Update(t.Context()); err == nil {
		t.Error("Update hid a throttled DescribeInstanceTypes")
	}
	if _, err := e.provider.List(t.Context(), nc); err != nil {
		t.Errorf("List after a failed refresh: %v", err)
	}
}

func TestListErrors(t *testing.T) {
	e := newEnv(t, nil)
	nc := nodeClass()
	nc.Status.Subnets = nil
	if _, err := e.provider.List(t.Context(), nc); err == nil || !strings.Contains(err.Error(), "no subnets found") {
		t.Errorf("error = %v, want no subnets found", err)
	}
	empty := instancetype.NewProvider(fake.NewEC2(), e.prices, e.unavailable, nil, instancetype.Options{Region: "us-west-2"}, e.clock)
	if err := empty.Update(t.Context()); err == nil {
		t.Error("Update against an empty EC2 succeeded")
	}
	if _, err := empty.List(t.Context(), nodeClass()); err == nil || !strings.Contains(err.Error(), "no instance types found") {
		t.Errorf("error = %v, want no instance types found", err)
	}
}

type offering struct {
	price     float64
	available bool
}

func offeringsOf(it *cloudprovider.InstanceType) map[string]offering {
	out := map[string]offering{}
	for _, o := range it.Offerings {
		if o.CapacityType != scheduling.CapacityTypeRsv {
			out[o.Zone+"/"+o.CapacityType] = offering{o.Price, o.Available}
		}
	}
	return out
}

func diffOfferings(t *testing.T, what string, want, got map[string]offering) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d offerings %v, want %d", what, len(got), got, len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || g.available != w.available || w.available && g.price != w.price {
			t.Errorf("%s %s = %+v (present %v), want %+v", what, k, g, ok, w)
		}
	}
}

// TestConcurrentUse lists from several goroutines while offerings are
// marked and EC2 data and prices are refreshed (run with -race).
func TestConcurrentUse(t *testing.T) {
	e := newEnv(t, nil)
	nc := nodeClass()
	done := make(chan struct{})
	errs := make(chan error, 8)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if _, err := e.provider.List(t.Context(), nc); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 20 {
		e.unavailable.MarkUnavailable(t.Context(), "InsufficientInstanceCapacity", "m5.large", zones[i%3].Name, "spot")
		if i%10 == 0 {
			if err := e.provider.Update(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	types, err := e.provider.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range find(t, types, "m5.large").Offerings {
		if o.CapacityType == "spot" && o.Available {
			t.Errorf("spot in %s available after being marked", o.Zone)
		}
	}
}

// An offering refused inside a placement group is unavailable to the
// classes launching into that group only; one refused in a partition is
// kept apart from the group's offerings (upstream's keys).
func TestOfferingsRefusedInAPlacementGroup(t *testing.T) {
	e := newEnv(t, nil)
	plain := nodeClass()
	inGroup := func(name, id string) *awsv1.EC2NodeClass {
		nc := nodeClass()
		nc.Name = name
		nc.Status.PlacementGroup = &awsv1.PlacementGroup{ID: id, Name: name, Strategy: awsv1.PlacementGroupStrategyCluster}
		return nc
	}
	grouped, other := inGroup("grouped", "pg-1"), inGroup("other", "pg-2")
	available := func(nc *awsv1.EC2NodeClass) bool {
		t.Helper()
		types, err := e.provider.List(t.Context(), nc)
		if err != nil {
			t.Fatal(err)
		}
		return offeringsOf(find(t, types, "m5.large"))["us-west-2a/on-demand"].available
	}
	e.unavailable.MarkUnavailableInPlacementGroup(t.Context(), "InsufficientInstanceCapacity", "m5.large", "us-west-2a", "on-demand", "pg-1", "2")
	if !available(grouped) {
		t.Error("a refusal in partition 2 took the offering from the whole group")
	}
	e.unavailable.MarkUnavailableInPlacementGroup(t.Context(), "InsufficientInstanceCapacity", "m5.large", "us-west-2a", "on-demand", "pg-1", "")
	for nc, want := range map[*awsv1.EC2NodeClass]bool{grouped: false, plain: true, other: true} {
		if got := available(nc); got != want {
			t.Errorf("%s: m5.large us-west-2a on-demand available = %v, want %v", nc.Name, got, want)
		}
	}
	e.unavailable.MarkUnavailable(t.Context(), "InsufficientInstanceCapacity", "m5.large", "us-west-2a", "on-demand")
	if available(other) {
		t.Error("a refusal outside any group left the offering available to a class in a group")
	}
}
