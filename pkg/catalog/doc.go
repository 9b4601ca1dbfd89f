// Package catalog parses karp's instance-type catalog JSON into
// scheduling.InstanceType values. A catalog is one object: a "description"
// or "source", an optional "region", and "instanceTypes", each with a
// name, labels, and optionally capacity, kubeReserved, allocatable,
// onDemandPricePerHour and offerings (zone, capacityType, price, available).
//
// Allocatable is the catalog's allocatable when present, else capacity minus
// kubeReserved; a type with neither capacity nor allocatable is rejected.
// Capacity, when absent, is the instance type's own figures: cpu from its
// karpenter.k8s.aws/instance-cpu (or karpenter.kwok.sh/instance-cpu) label,
// memory from karpenter.k8s.aws/instance-memory (MiB) or
// karpenter.kwok.sh/instance-memory (a quantity), so Nodes report, and
// NodePool limits count, what a real node of the type has; other resources,
// and a type without those labels, take the allocatable.
//
// Offerings: a type that lists offerings keeps them as they are. A type
// without offerings gets derived ones:
//   - on-demand in every zone of Options.Zones (default us-east-1a, us-east-1b,
//     us-east-1c) at onDemandPricePerHour;
//   - spot in every zone at onDemandPricePerHour × (1 − d), where the discount
//     d is deterministic per (type, zone): the 64-bit FNV-1a hash of
//     "<type>/<zone>", passed through the murmur3 finalizer, mapped linearly
//     onto [SpotDiscountMin, SpotDiscountMax]
//     (default 0.55–0.75, i.e. spot is 55–75% cheaper than on-demand). The
//     same catalog and options always give the same prices.
//
// MarkUnavailable flips chosen offerings to unavailable, which is how
// simulations inject insufficient capacity.
//
// The package is pure: it parses bytes and never reads the network.
package catalog
