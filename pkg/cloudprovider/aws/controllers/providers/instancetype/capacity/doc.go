// Package capacity learns instance types' real memory capacity from the
// Nodes karp launched, as upstream Karpenter's AWS provider's
// providers.instancetype.capacity controller does.
//
// An instance type's memory capacity is estimated before launch as its
// EC2 memory less --vm-memory-overhead-percent; the kubelet then reports
// what the OS really left. When a Node of an EC2NodeClass registers
// (karpenter.sh/registered=true, and at start for every registered Node),
// and its NodeClaim's image is the AMI a launch of that instance type
// would pick from the class's status.amis now, the Node's
// status.capacity.memory is handed to the instance type provider
// (RecordMemoryCapacity), which keeps the smallest value per instance type
// and AMI set for 60 days and gives it to later launches instead of the
// estimate. Nodes of an older AMI, of another provider's NodeClass, or
// whose NodeClaim or EC2NodeClass is gone teach nothing.
//
// It imports no AWS SDK: the instance type provider, behind the small
// interface declared here, holds what was learnt.
package capacity
