// Package instance launches, finds and terminates the EC2 instances behind
// karp's NodeClaims. Launches go through CreateFleet (type instant,
// price-capacity-optimized for spot, lowest-price for on-demand; a capacity
// block is bought as capacity-block with no strategy, an interruptible
// reservation as reserved-capacity) with one override per instance type
// and zone; alike launches arriving together
// share one call (TargetCapacity = the batch size). DescribeInstances and
// TerminateInstances calls are batched too.
//
// Invariants: a NodeClaim never gets two instances. Before launching, the
// provider looks for an instance tagged karpenter.sh/nodeclaim=<name>; a
// launched instance is tagged before Create returns (or terminated if it
// cannot be); a batch's CreateFleet carries a client token derived from the
// request and its NodeClaims, so a repeated call returns the first fleet.
//
// A launched instance's zone and subnet come from CreateFleet's
// per-instance fields, else from the fleet override that produced it (its
// subnet mapped to its zone through the request's overrides), else from
// DescribeInstances; an instance none of them places fails the launch
// (left tagged, for a retry or the leaked-instance collector), so no
// providerID ever lacks its zone. Answers are not trusted to have applied
// the request's filters: List, the NodeClaim lookup and Get check tags and
// states client-side, and Delete terminates only an instance tagged with a
// NodePool and this cluster's name or ownership tag.
//
// The package imports the EC2 SDK only through the narrow EC2API interface
// (fake.EC2 in tests); of the EC2NodeClass API it uses only the tag keys,
// and of launch templates only their names.
package instance
