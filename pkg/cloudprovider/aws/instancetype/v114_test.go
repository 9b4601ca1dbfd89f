package instancetype_test

import (
	"encoding/json"
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype/kubeletcel"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/pricing"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// newEnvWithInfos is newEnv with the catalog's EC2 answers edited first
// (the catalog does not carry every DescribeInstanceTypes field).
func newEnvWithInfos(t *testing.T, opts instancetype.Options, edit func(map[string]*ec2types.InstanceTypeInfo)) *instancetype.Provider {
	t.Helper()
	infos, err := fake.CatalogInstanceTypes(instancetypes.EC2)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*ec2types.InstanceTypeInfo{}
	for i := range infos {
		byName[string(infos[i].InstanceType)] = &infos[i]
	}
	edit(byName)
	e := env{clock: clocktesting.NewFakeClock(now), ec2: fake.NewEC2(), pricingAPI: fake.NewPricing()}
	e.ec2.SeedCatalog(infos, zones...)
	e.prices, err = pricing.NewProvider(e.ec2, e.pricingAPI, "us-west-2", false, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	p := instancetype.NewProvider(e.ec2, e.prices, cache.NewUnavailableOfferings(e.clock), nil, opts, e.clock)
	if err := p.Update(t.Context()); err != nil {
		t.Fatal(err)
	}
	return p
}

func available(t *testing.T, p *instancetype.Provider, nc *awsv1.EC2NodeClass, name string) bool {
	t.Helper()
	types, err := p.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	_, ok := find(t, types, name).CheapestOffering(scheduling.NewRequirements())
	return ok
}

// cpuOptions.nestedVirtualization=enabled offers only the types whose
// ProcessorInfo.SupportedFeatures list nested-virtualization; "disabled"
// or unset filters nothing.
func TestNestedVirtualizationFiltersTypes(t *testing.T) {
	p := newEnvWithInfos(t, instancetype.Options{Region: "us-west-2", VMMemoryOverheadPercent: 0.075}, func(infos map[string]*ec2types.InstanceTypeInfo) {
		infos["c5.large"].ProcessorInfo.SupportedFeatures = []ec2types.SupportedAdditionalProcessorFeature{
			ec2types.SupportedAdditionalProcessorFeatureAmdSevSnp, ec2types.SupportedAdditionalProcessorFeatureNestedVirtualization,
		}
		infos["m5.large"].ProcessorInfo.SupportedFeatures = []ec2types.SupportedAdditionalProcessorFeature{ec2types.SupportedAdditionalProcessorFeatureAmdSevSnp}
	})
	for setting, want := range map[string]map[string]bool{
		"":         {"c5.large": true, "m5.large": true, "m6g.large": true},
		"disabled": {"c5.large": true, "m5.large": true, "m6g.large": true},
		"enabled":  {"c5.large": true, "m5.large": false, "m6g.large": false},
	} {
		nc := nodeClass()
		if setting != "" {
			nc.Spec.CPUOptions = &awsv1.CPUOptions{NestedVirtualization: ptr(setting)}
		}
		for name, w := range want {
			if got := available(t, p, nc, name); got != w {
				t.Errorf("nestedVirtualization %q: %s available = %v, want %v", setting, name, got, w)
			}
		}
	}
}

// connectionTracking needs a Nitro type, as upstream: Xen types are not
// offered when the class sets it.
func TestConnectionTrackingNeedsNitro(t *testing.T) {
	e := newEnv(t, nil)
	nc := nodeClass()
	if !available(t, e.provider, nc, "m4.large") || !available(t, e.provider, nc, "m5.large") {
		t.Fatal("m4.large and m5.large are offered without connection tracking")
	}
	nc.Spec.ConnectionTracking = &awsv1.ConnectionTracking{UDPTimeout: ptr(int32(60))}
	if available(t, e.provider, nc, "m4.large") {
		t.Error("m4.large (Xen) is offered with connection tracking")
	}
	if !available(t, e.provider, nc, "m5.large") {
		t.Error("m5.large (Nitro) is not offered with connection tracking")
	}
}

// A maxPods CEL expression is evaluated per type with the NodeClassCEL
// gate on (max_pods is the type's default), and ignored with it off.
func TestMaxPodsExpression(t *testing.T) {
	expressions, err := kubeletcel.New()
	if err != nil {
		t.Fatal(err)
	}
	class := func(expr string, podsPerCore *int32) *awsv1.EC2NodeClass {
		nc := nodeClass()
		raw, _ := json.Marshal(map[string]interface{}{"maxPods": expr, "podsPerCore": podsPerCore})
		nc.Spec.Kubelet = &awsv1.KubeletConfiguration{}
		if err := json.Unmarshal(raw, nc.Spec.Kubelet); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	on := instancetype.Options{Region: "us-west-2", VMMemoryOverheadPercent: 0.075, KubeletExpressions: expressions}
	off := instancetype.Options{Region: "us-west-2", VMMemoryOverheadPercent: 0.075}
	for name, tc := range map[string]struct {
		opts instancetype.Options
		nc   *awsv1.EC2NodeClass
		want map[string]int64 // type -> pods; -1 means not listed
	}{
		// m5.large: 3 ENIs x 10 IPs -> 29 pods; p4d.24xlarge -> 737.
		"capped default":         {opts: on, nc: class("min(max_pods, 50)", nil), want: map[string]int64{"m5.large": 29, "p4d.24xlarge": 50}},
		"per vcpu":               {opts: on, nc: class("vcpus * 10", nil), want: map[string]int64{"m5.large": 20, "p4d.24xlarge": 960}},
		"podsPerCore still caps": {opts: on, nc: class("200", ptr(int32(4))), want: map[string]int64{"m5.large": 8}},
		"by type":                {opts: on, nc: class("instance_type == 'm5.large' ? 7 : max_pods", nil), want: map[string]int64{"m5.large": 7, "p4d.24xlarge": 737}},
		"failing for some types": {opts: on, nc: class("max_pods - 100", nil), want: map[string]int64{"m5.large": -1, "p4d.24xlarge": 637}},
		"gate off: default":      {opts: off, nc: class("vcpus * 10", nil), want: map[string]int64{"m5.large": 29, "p4d.24xlarge": 737}},
	} {
		t.Run(name, func(t *testing.T) {
			p := newEnvWithInfos(t, tc.opts, func(map[string]*ec2types.InstanceTypeInfo) {})
			types, err := p.List(t.Context(), tc.nc)
			if err != nil {
				t.Fatal(err)
			}
			for typeName, want := range tc.want {
				var got int64 = -1
				for _, it := range types {
					if it.Name == typeName {
						got = it.Capacity.Pods().Value()
					}
				}
				if got != want {
					t.Errorf("%s pods = %d, want %d", typeName, got, want)
				}
			}
		})
	}
}
