package catalog

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Options tune offering derivation for types without offerings.
type Options struct {
	// Zones are the zones derived offerings are placed in.
	Zones []string
	// SpotDiscountMin and SpotDiscountMax bound the spot discount (fraction
	// of the on-demand price taken off).
	SpotDiscountMin, SpotDiscountMax float64
	// NoSpot disables derived spot offerings.
	NoSpot bool
}

// DefaultOptions are the us-east-1 zones and a 55–75% spot discount.
func DefaultOptions() Options {
	return Options{Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}, SpotDiscountMin: 0.55, SpotDiscountMax: 0.75}
}

// File is the catalog document.
type File struct {
	Description   string         `json:"description,omitempty"`
	Source        string         `json:"source,omitempty"`
	Region        string         `json:"region,omitempty"`
	InstanceTypes []InstanceType `json:"instanceTypes"`
}

// InstanceType is one catalog entry.
type InstanceType struct {
	Name                 string              `json:"name"`
	Labels               map[string]string   `json:"labels,omitempty"`
	Capacity             corev1.ResourceList `json:"capacity,omitempty"`
	KubeReserved         corev1.ResourceList `json:"kubeReserved,omitempty"`
	Allocatable          corev1.ResourceList `json:"allocatable,omitempty"`
	OnDemandPricePerHour *float64            `json:"onDemandPricePerHour,omitempty"`
	Offerings            []Offering          `json:"offerings,omitempty"`
}

// Offering is one catalog offering.
type Offering struct {
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	Price        float64 `json:"price"`
	// Available defaults to true when omitted.
	Available *bool `json:"available,omitempty"`
}

// LoadFile reads and parses a catalog file.
func LoadFile(path string, opts Options) ([]*scheduling.InstanceType, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading catalog: %w", err)
	}
	return Parse(data, opts)
}

// Parse decodes catalog JSON into instance types, in catalog order.
func Parse(data []byte, opts Options) ([]*scheduling.InstanceType, error) {
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("decoding catalog: %w", err)
	}
	out := make([]*scheduling.InstanceType, 0, len(f.InstanceTypes))
	seen := map[string]bool{}
	for i := range f.InstanceTypes {
		it, err := f.InstanceTypes[i].convert(opts)
		if err != nil {
			return nil, err
		}
		if seen[it.Name] {
			return nil, fmt.Errorf("instance type %s listed twice", it.Name)
		}
		seen[it.Name] = true
		out = append(out, it)
	}
	return out, nil
}

func (c *InstanceType) convert(opts Options) (*scheduling.InstanceType, error) {
	if c.Name == "" {
		return nil, fmt.Errorf("instance type without a name")
	}
	allocatable := c.Allocatable
	if allocatable == nil {
		if c.Capacity == nil {
			return nil, fmt.Errorf("instance type %s has neither capacity nor allocatable", c.Name)
		}
		allocatable = subtract(c.Capacity, c.KubeReserved)
	}
	capacity := c.Capacity
	if capacity == nil {
		var err error
		if capacity, err = c.labelCapacity(allocatable); err != nil {
			return nil, err
		}
	}
	offerings, err := c.offerings(opts)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	for k, v := range c.Labels {
		labels[k] = v
	}
	return scheduling.NewInstanceType(c.Name, labels, capacity, allocatable, offerings), nil
}

func (c *InstanceType) offerings(opts Options) ([]*scheduling.Offering, error) {
	if len(c.Offerings) > 0 {
		out := make([]*scheduling.Offering, 0, len(c.Offerings))
		for _, o := range c.Offerings {
			available := o.Available == nil || *o.Available
			out = append(out, &scheduling.Offering{Zone: o.Zone, CapacityType: o.CapacityType, Price: o.Price, Available: available})
		}
		return out, nil
	}
	if c.OnDemandPricePerHour == nil {
		return nil, fmt.Errorf("instance type %s has neither offerings nor onDemandPricePerHour", c.Name)
	}
	od := *c.OnDemandPricePerHour
	var out []*scheduling.Offering
	for _, z := range opts.Zones {
		out = append(out, &scheduling.Offering{Zone: z, CapacityType: scheduling.CapacityTypeOD, Price: od, Available: true})
	}
	if !opts.NoSpot {
		for _, z := range opts.Zones {
			out = append(out, &scheduling.Offering{Zone: z, CapacityType: scheduling.CapacityTypeSpot, Price: SpotPrice(c.Name, z, od, opts), Available: true})
		}
	}
	return out, nil
}

// SpotPrice is the derived spot price of a type in a zone (see package doc),
// rounded to 1/10000 of a dollar.
func SpotPrice(name, zone string, onDemand float64, opts Options) float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name + "/" + zone))
	frac := float64(mix(h.Sum64())) / float64(math.MaxUint64)
	discount := opts.SpotDiscountMin + frac*(opts.SpotDiscountMax-opts.SpotDiscountMin)
	return math.Round(onDemand*(1-discount)*1e4) / 1e4
}

// mix is the murmur3 64-bit finalizer: FNV alone barely moves the high
// bits when only the last byte (the zone letter) differs.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	for name, q := range b {
		v, ok := out[name]
		if !ok {
			continue
		}
		v.Sub(q)
		if v.Sign() < 0 {
			v = resource.Quantity{}
		}
		out[name] = v
	}
	return out
}

// MarkUnavailable marks the offerings of the named type in zone with the
// capacity type unavailable ("" matches any zone or capacity type) and
// returns how many offerings changed.
func MarkUnavailable(types []*scheduling.InstanceType, name, zone, capacityType string) int {
	n := 0
	for _, it := range types {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Available && (zone == "" || o.Zone == zone) && (capacityType == "" || o.CapacityType == capacityType) {
				o.Available = false
				n++
			}
		}
		it.RefreshOfferingRequirements()
	}
	return n
}

// Labels giving an instance type's own cpu count and memory: the AWS
// provider's (memory in MiB) and the kwok provider's (memory a quantity).
const (
	awsInstanceCPULabelKey     = "karpenter.k8s.aws/instance-cpu"
	awsInstanceMemoryLabelKey  = "karpenter.k8s.aws/instance-memory"
	kwokInstanceCPULabelKey    = "karpenter.kwok.sh/instance-cpu"
	kwokInstanceMemoryLabelKey = "karpenter.kwok.sh/instance-memory"
)

// labelCapacity is the capacity of a type the catalog gives no capacity
// for: cpu and memory from its instance-cpu and instance-memory labels
// (what a node of the type reports, and what NodePool limits count), every
// other resource, and cpu or memory without a label, as allocatable.
func (c *InstanceType) labelCapacity(allocatable corev1.ResourceList) (corev1.ResourceList, error) {
	capacity := allocatable.DeepCopy()
	for _, key := range []string{awsInstanceCPULabelKey, kwokInstanceCPULabelKey} {
		v, ok := c.Labels[key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("instance type %s: label %s=%q is not a positive whole number of cpus", c.Name, key, v)
		}
		capacity[corev1.ResourceCPU] = *resource.NewQuantity(n, resource.DecimalSI)
		break
	}
	if v, ok := c.Labels[awsInstanceMemoryLabelKey]; ok {
		mib, err := strconv.ParseInt(v, 10, 64)
		if err != nil || mib <= 0 {
			return nil, fmt.Errorf("instance type %s: label %s=%q is not a positive number of MiB", c.Name, awsInstanceMemoryLabelKey, v)
		}
		capacity[corev1.ResourceMemory] = *resource.NewQuantity(mib<<20, resource.BinarySI)
	} else if v, ok := c.Labels[kwokInstanceMemoryLabelKey]; ok {
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() <= 0 {
			return nil, fmt.Errorf("instance type %s: label %s=%q is not a positive memory quantity", c.Name, kwokInstanceMemoryLabelKey, v)
		}
		capacity[corev1.ResourceMemory] = q
	}
	return capacity, nil
}
