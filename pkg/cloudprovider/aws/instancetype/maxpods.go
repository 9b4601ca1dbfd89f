package instancetype

import (
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype/kubeletcel"
)

// forType returns the sizing of one instance type: with a maxPods CEL
// expression evaluated for the type (the NodeClassCEL gate on), it is the
// class's sizing with that value as a static maxPods, so capacity,
// overhead and the user data's max pods all follow it. ok is false when
// the expression fails for the type, which is then not offered (upstream
// drops the type too).
func (s sizing) forType(info *ec2types.InstanceTypeInfo, expressions *kubeletcel.Environment) (sizing, bool) {
	k := s.kubelet
	if k == nil || k.MaxPodsExpression == nil || k.MaxPods != nil {
		return s, true
	}
	withoutExpr := k.DeepCopy()
	withoutExpr.MaxPodsExpression = nil
	s.kubelet = withoutExpr
	if expressions == nil {
		// Gate off: the family's default, as upstream.
		return s, true
	}
	// max_pods is what the type would get without the expression.
	vars := kubeletcel.Vars{
		VCPUs:        int64(deref(info.VCpuInfo.DefaultVCpus)),
		MaxPods:      s.pods(info),
		InstanceType: string(info.InstanceType),
	}
	if info.MemoryInfo != nil {
		vars.MemoryMiB = deref(info.MemoryInfo.SizeInMiB)
	}
	if ni := info.NetworkInfo; ni != nil {
		if ni.DefaultNetworkCardIndex != nil && int(*ni.DefaultNetworkCardIndex) < len(ni.NetworkCards) {
			vars.DefaultENIs = int64(deref(ni.NetworkCards[*ni.DefaultNetworkCardIndex].MaximumNetworkInterfaces))
		}
		vars.IPsPerENI = int64(deref(ni.Ipv4AddressesPerInterface))
	}
	maxPods, err := expressions.MaxPods(*k.MaxPodsExpression, vars)
	if err != nil {
		return s, false
	}
	withoutExpr.MaxPods = &maxPods
	return s, true
}
