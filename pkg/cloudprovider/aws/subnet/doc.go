// Package subnet discovers the subnets an EC2NodeClass's
// subnetSelectorTerms select, as upstream Karpenter does: every id term is
// merged into one subnet-id query, every tags term is a query of its own
// (tags ANDed, "*" matching any value), and the answers are unioned by
// subnet ID. Results are cached per NodeClass generation for the refresh
// interval, so a spec change is resolved afresh and an unchanged NodeClass
// costs at most one DescribeSubnets round per interval.
//
// The status form (Status) orders subnets by available IP addresses, most
// first, then by ID; launches read it from the EC2NodeClass status. The
// provider also remembers each subnet's available IP count from its last
// listing for the launch path.
package subnet
