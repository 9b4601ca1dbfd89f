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
//
// NewProvider is the one place the provider is assembled: from explicit
// Dependencies and the Clients of sdk.go it builds the cloud provider, its
// parts and the AWS controllers (package controllers/...), for pkg/operator
// (with the SDK's clients) and for the tests (awstest, with the fakes)
// alike. This package imports neither pkg/controllers nor pkg/operator: it
// declares the small Controller interface it returns.
package aws
