package instancetype

import (
	"math"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	// evictionMemoryMiB is the kubelet's default memory.available threshold.
	evictionMemoryMiB = 100
	// evictionNodefsPercent is the default nodefs.available threshold.
	evictionNodefsPercent = 10
)

// cpuReservationTiers reserve, per range of millicores, a share of it for
// the kubelet and container runtime: 6% of the first core, 1% of the
// second, 0.5% of the third and fourth, 0.25% of the rest.
var cpuReservationTiers = []struct {
	millicores int64
	percent    float64
}{
	{1000, 6},
	{1000, 1},
	{2000, 0.5},
	{math.MaxInt64, 0.25},
}

// allocatable is capacity less kube-reserved, system-reserved and the hard
// eviction thresholds, never below zero.
func (s sizing) allocatable(info *ec2types.InstanceTypeInfo, capacity corev1.ResourceList) corev1.ResourceList {
	out := capacity.DeepCopy()
	for _, overhead := range []corev1.ResourceList{s.kubeReserved(info), s.systemReserved(), s.evictionThreshold(capacity)} {
		for name, q := range overhead {
			v, ok := out[name]
			if !ok {
				continue
			}
			v.Sub(q)
			if v.Sign() < 0 {
				v = *resource.NewQuantity(0, v.Format)
			}
			out[name] = v
		}
	}
	return out
}

// kubeReserved defaults memory to 11 MiB per pod + 255 MiB, ephemeral
// storage to 1Gi and CPU by cpuReservationTiers; the class's kubeReserved
// replaces each key it sets.
func (s sizing) kubeReserved(info *ec2types.InstanceTypeInfo) corev1.ResourceList {
	pods := s.pods(info)
	if s.traits.kubeReservedUsesENIPods {
		pods = eniLimitedPods(info, 0, s.networkInterfaces)
	}
	cpu := int64(deref(info.VCpuInfo.DefaultVCpus)) * 1000
	var reservedCPU int64
	for _, tier := range cpuReservationTiers {
		if cpu <= 0 {
			break
		}
		take := min(cpu, tier.millicores)
		reservedCPU += int64(float64(take) * tier.percent / 100)
		cpu -= take
	}
	rl := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(reservedCPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity((11*pods+255)*1024*1024, resource.BinarySI),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Gi"),
	}
	if s.kubelet != nil {
		overrideReserved(rl, s.kubelet.KubeReserved)
	}
	return rl
}

// systemReserved is only what the class sets.
func (s sizing) systemReserved() corev1.ResourceList {
	rl := corev1.ResourceList{}
	if s.kubelet != nil {
		overrideReserved(rl, s.kubelet.SystemReserved)
	}
	return rl
}

// overrideReserved sets rl's cpu, memory and ephemeral-storage from a
// kubeReserved or systemReserved map (pid is not a node resource; values
// that do not parse were rejected by validation and are ignored).
func overrideReserved(rl corev1.ResourceList, values map[string]string) {
	for key, value := range values {
		name := corev1.ResourceName(key)
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory && name != corev1.ResourceEphemeralStorage {
			continue
		}
		if q, err := resource.ParseQuantity(value); err == nil {
			rl[name] = q
		}
	}
}

// evictionThreshold is the memory and nodefs the kubelet keeps free:
// 100Mi and 10% of ephemeral storage by default, or the class's
// evictionHard (a percentage of capacity or a quantity). Soft thresholds
// do not reduce allocatable.
func (s sizing) evictionThreshold(capacity corev1.ResourceList) corev1.ResourceList {
	rl := corev1.ResourceList{
		corev1.ResourceMemory:           *resource.NewQuantity(evictionMemoryMiB*1024*1024, resource.BinarySI),
		corev1.ResourceEphemeralStorage: percentOf(capacity[corev1.ResourceEphemeralStorage], evictionNodefsPercent),
	}
	if s.kubelet == nil {
		return rl
	}
	for signal, name := range map[string]corev1.ResourceName{"memory.available": corev1.ResourceMemory, "nodefs.available": corev1.ResourceEphemeralStorage} {
		value, ok := s.kubelet.EvictionHard[signal]
		if !ok {
			continue
		}
		if pct, isPct := strings.CutSuffix(value, "%"); isPct {
			p, err := strconv.ParseFloat(pct, 64)
			if err != nil {
				continue
			}
			if p >= 100 {
				// 100% would evict everything; the kubelet treats it as
				// no threshold.
				p = 0
			}
			rl[name] = percentOf(capacity[name], p)
			continue
		}
		if q, err := resource.ParseQuantity(value); err == nil {
			rl[name] = q
		}
	}
	return rl
}

// percentOf is ceil(q × p / 100) in q's units.
func percentOf(q resource.Quantity, p float64) resource.Quantity {
	return *resource.NewQuantity(int64(math.Ceil(float64(q.Value())*p/100)), q.Format)
}
