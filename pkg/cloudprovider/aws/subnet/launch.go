package subnet

import (
	"slices"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// ZonalSubnetsForLaunch picks, for each zone of nodeClass's status subnets,
// the subnet with the most available IP addresses, as upstream does: the
// count of the last listing less what launches since then are predicted to
// have taken. It takes predictedIPs (the pods the smallest candidate
// instance type can hold) from each chosen subnet's count, so concurrent
// launches spread over a zone's subnets; give back what a launch did not
// use with ReleaseIPs. Subnets skip (e.g. marked unavailable after
// InsufficientFreeAddressesInSubnet) are left out. A subnet the provider
// has no count for ranks after those it has, in status order.
func (p *Provider) ZonalSubnetsForLaunch(nodeClass *awsv1.EC2NodeClass, predictedIPs int32, skip func(subnetID string) bool) map[string]awsv1.Subnet {
	p.mu.Lock()
	defer p.mu.Unlock()
	chosen := map[string]awsv1.Subnet{}
	best := map[string]int32{}
	for _, s := range nodeClass.Status.Subnets {
		if skip != nil && skip(s.ID) {
			continue
		}
		free := int32(-1)
		if a, ok := p.availableIPs[s.ID]; ok {
			free = a.count - p.inflight[s.ID]
		}
		if have, ok := best[s.Zone]; !ok || free > have {
			chosen[s.Zone], best[s.Zone] = s, free
		}
	}
	for _, s := range chosen {
		if _, ok := p.availableIPs[s.ID]; ok {
			p.inflight[s.ID] += predictedIPs
		}
	}
	return chosen
}

// ReleaseIPs gives back the addresses ZonalSubnetsForLaunch took from
// subnets a launch did not use.
func (p *Provider) ReleaseIPs(subnetIDs []string, ips int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range slices.Compact(slices.Sorted(slices.Values(subnetIDs))) {
		if n, ok := p.inflight[id]; ok {
			p.inflight[id] = max(n-ips, 0)
		}
	}
}

// forgetInflight drops the predicted consumption of listed subnets: a
// listing's count already includes the launches before it.
func (p *Provider) forgetInflight(ids []string) {
	for _, id := range ids {
		delete(p.inflight, id)
	}
}
