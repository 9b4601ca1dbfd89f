// Package aws is karp's AWS EC2 cloud provider: it launches the instances
// behind NodeClaims through CreateFleet, resolves an EC2NodeClass's subnets,
// security groups and AMIs, builds instance types and prices from the EC2
// and Pricing APIs, and renders the user data that joins an instance to the
// cluster.
//
// The provider is split by concern into sub-packages (instancetype, pricing,
// subnet, securitygroup, ami, launchtemplate, instance, userdata, ...). Each
// declares the narrow slice of the AWS SDK it calls as an unexported
// interface, so tests substitute the stateful fakes in package fake. Nothing
// in pkg/scheduling or pkg/simulation imports this package.
package aws
