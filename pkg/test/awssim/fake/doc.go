// Package fake holds stateful in-process fakes of the AWS APIs the provider
// calls (EC2, SSM, Pricing, IAM, EKS, SQS, ARC zonal shift). They keep state (instances, fleets, launch
// templates, tags, parameters, queued messages) so tests assert on the world, not on calls,
// and they can be told to fail a named API call (throttling, insufficient
// capacity) a given number of times. Every call is counted, so benchmarks
// can report API calls per launched node.
//
// NewAccount is the one seeding of a simulated account (the catalog in a
// region's zones, prices, a discoverable network, AMIs behind their SSM
// parameters, the node role, the EKS cluster): the wire simulator
// (awssim.New), the process harness (awsprocess.Account) and the provider
// harness (awstest.NewWorld) all build theirs with it, differing only in
// its options. PublishAMI releases EKS-optimized AMIs as AWS does. ARC
// (NewARC) is outside the account: only tests of --enable-zonal-shift
// build one, and the wire simulator does not serve it.
//
// The fakes are test infrastructure: product code never imports them (a
// depguard rule in .golangci.yml). The in-package tests of the AWS
// provider's packages do, so this package imports none of the provider
// packages that have such tests.
package fake
