// Package fake holds stateful in-process fakes of the AWS APIs the provider
// calls (EC2, SSM, Pricing, IAM, EKS, SQS). They keep state (instances, fleets, launch
// templates, tags, parameters, queued messages) so tests assert on the world, not on calls,
// and they can be told to fail a named API call (throttling, insufficient
// capacity) a given number of times. Every call is counted, so benchmarks
// can report API calls per launched node.
package fake
