// Package interruption is what every interruption handler does to a
// NodeClaim whose instance the cloud is taking away, whichever way the
// notice arrives (a kwok Node annotation, an EC2 message on SQS): set the
// termination deadline to the moment the instance goes, delete the
// NodeClaim so the core's graceful termination cordons and drains the node
// while the provisioner launches the replacement in parallel, and count
// the disruption.
//
// It holds no controller: the controllers in
// pkg/cloudprovider/kwok/controllers/interruption and
// pkg/cloudprovider/aws/interruption call it. It imports API types,
// controller-runtime's client and pkg/metrics only.
package interruption
