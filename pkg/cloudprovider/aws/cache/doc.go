// Package cache holds the AWS provider's unavailable-offerings cache: the
// offerings (instance type, zone, capacity type), whole capacity types and
// subnets that EC2 recently refused for lack of capacity, each remembered
// for a TTL (3 minutes, as upstream) so the provisioner places pods on
// other offerings meanwhile.
//
// The launch path marks entries from CreateFleet errors and interruption
// handling marks spot offerings; the instance-type provider reads them to
// mark offerings unavailable and watches the per-instance-type sequence
// number to know when a cached instance type must be rebuilt. The cache
// reads time from an injected clock and expires entries lazily, so it runs
// no goroutine.
package cache
