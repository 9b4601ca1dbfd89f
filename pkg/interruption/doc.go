// Package interruption is what every handler does to a NodeClaim whose
// instance must go, whichever way the notice arrives (a kwok Node
// annotation, an EC2 message on SQS, a repair): set the termination
// deadline to the moment the instance goes and either delete the NodeClaim
// at once (Terminate), so the core's graceful termination cordons and
// drains the node while the provisioner launches for its pods, or, when
// the notice leaves time for a launch (ReplaceByForNodeClaim), annotate
// it with a replace-by deadline (ReplaceFirst) so the disruption
// controller launches the replacement and drains the node once it is
// initialized, the nodeclaim expiration controller deleting it at the
// deadline whatever is in flight.
//
// It holds no controller: the controllers in
// pkg/cloudprovider/kwok/controllers/interruption,
// pkg/cloudprovider/aws/interruption and pkg/controllers/node/health call
// it. How early a replacement is launched ahead of a deadline is one pure
// computation (LaunchTime, LaunchLead) that the disruption controller's
// expiry shares. It imports API types, controller-runtime's client and
// pkg/metrics only.
package interruption
