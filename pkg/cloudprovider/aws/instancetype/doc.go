// Package instancetype builds the AWS provider's instance types: for an
// EC2NodeClass, every EC2 instance type of the region (DescribeInstanceTypes)
// offered in the class's zones (DescribeInstanceTypeOfferings), with
// upstream's karpenter.k8s.aws labels, capacity and allocatable (VM memory
// overhead, kube-reserved and eviction formulas, ENI-limited max pods,
// kubelet overrides from the class), and offerings per zone and capacity
// type priced by package pricing and made unavailable by the
// unavailable-offerings cache (package cache). Once a registered Node of a
// type reports its memory capacity (RecordMemoryCapacity, fed by the
// providers.instancetype.capacity controller), the smallest reported value
// replaces the VM-memory-overhead estimate for every class with the same
// resolved AMIs, for 60 days (upstream's discovered capacity cache).
//
// EC2 data is fetched by Update (at start and by the providers.instancetype
// refresh controller), never on the List path; resolved instance types are
// cached per class shape (which includes its resolved AMIs) for 5 minutes
// and rebuilt when EC2 data, prices, unavailable offerings or learnt memory
// capacities change. The values List returns are shared and must not be
// mutated. The EC2 SDK client sits behind the narrow interface declared
// here; nothing in pkg/scheduling or pkg/simulation imports this package.
package instancetype
