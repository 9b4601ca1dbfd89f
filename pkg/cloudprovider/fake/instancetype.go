package fake

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Zones are the zones default fake offerings are placed in.
var Zones = []string{"test-zone-1", "test-zone-2", "test-zone-3"}

// InstanceTypeOptions describes a fake instance type; zero fields take the
// defaults NewInstanceType documents.
type InstanceTypeOptions struct {
	Name         string
	Architecture string
	OS           string
	// Resources is the capacity (and allocatable: fake types have no overhead).
	Resources corev1.ResourceList
	// Labels are extra labels the type's nodes carry.
	Labels map[string]string
	// Offerings, when nil, are spot in test-zone-1 and test-zone-2 and
	// on-demand in every zone, priced from cpu and memory.
	Offerings []*cloudprovider.Offering
}

// NewInstanceType builds a fake instance type: amd64, linux, 4 cpu, 4Gi
// memory and 5 pods unless the options say otherwise.
func NewInstanceType(opts InstanceTypeOptions) *cloudprovider.InstanceType {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods:   resource.MustParse("5"),
	}
	for name, q := range opts.Resources {
		resources[name] = q
	}
	labels := map[string]string{
		corev1.LabelArchStable: orDefault(opts.Architecture, karpv1.ArchitectureAmd64),
		corev1.LabelOSStable:   orDefault(opts.OS, string(corev1.Linux)),
	}
	for k, v := range opts.Labels {
		labels[k] = v
	}
	offerings := opts.Offerings
	if offerings == nil {
		offerings = defaultOfferings(price(resources))
	}
	return scheduling.NewInstanceType(orDefault(opts.Name, "default-instance-type"), labels, resources, resources.DeepCopy(), offerings)
}

// DefaultInstanceTypes is the catalog a fake provider starts with: a
// default type, a small and a large one, an arm64 one and a GPU one.
func DefaultInstanceTypes() []*cloudprovider.InstanceType {
	list := func(cpu, memory, pods string) corev1.ResourceList {
		return corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(cpu),
			corev1.ResourceMemory: resource.MustParse(memory),
			corev1.ResourcePods:   resource.MustParse(pods),
		}
	}
	gpu := list("8", "32Gi", "50")
	gpu["nvidia.com/gpu"] = resource.MustParse("2")
	return []*cloudprovider.InstanceType{
		NewInstanceType(InstanceTypeOptions{Name: "default-instance-type"}),
		NewInstanceType(InstanceTypeOptions{Name: "small-instance-type", Resources: list("2", "2Gi", "10")}),
		NewInstanceType(InstanceTypeOptions{Name: "large-instance-type", Resources: list("16", "64Gi", "110")}),
		NewInstanceType(InstanceTypeOptions{Name: "arm-instance-type", Architecture: karpv1.ArchitectureArm64, Resources: list("16", "128Gi", "110")}),
		NewInstanceType(InstanceTypeOptions{Name: "gpu-vendor-instance-type", Resources: gpu}),
	}
}

// price follows upstream kwok's synthetic model: $0.025 per cpu and $0.001
// per GiB per hour.
func price(resources corev1.ResourceList) float64 {
	cpu := resources.Cpu().AsApproximateFloat64()
	gib := resources.Memory().AsApproximateFloat64() / (1 << 30)
	return 0.025*cpu + 0.001*gib
}

func defaultOfferings(onDemand float64) []*cloudprovider.Offering {
	var out []*cloudprovider.Offering
	for i, zone := range Zones {
		if i < 2 {
			out = append(out, &cloudprovider.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeSpot, Price: onDemand * 0.7, Available: true})
		}
		out = append(out, &cloudprovider.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: onDemand, Available: true})
	}
	return out
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// providerIDFor returns fake://<name>, suffixed -2, -3, ... when taken.
func providerIDFor(name string, taken func(string) bool) string {
	id := "fake://" + name
	for n := 2; taken(id); n++ {
		id = fmt.Sprintf("fake://%s-%d", name, n)
	}
	return id
}
