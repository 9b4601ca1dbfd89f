// Package instancestatus is the AWS provider's instance status poll
// (upstream's "interruption.instancestatus"): every minute it asks EC2's
// DescribeInstanceStatus for the instances whose instance or system status
// check is impaired or that have a scheduled event, and acts on the
// cluster's NodeClaims through the interruption package's Handler, the
// same code the interruption queue's messages go through:
//   - a failed instance or system status check, impaired for at least two
//     minutes: the NodeClaim is deleted with a termination deadline of now
//     (forceful replacement);
//   - a scheduled event (reboot, maintenance, retirement, stop): the
//     NodeClaim is deleted (graceful replacement), whenever the event is
//     scheduled for.
//
// Each instance and category found unhealthy is counted once in
// karpenter_interruption_instance_status_unhealthy_total while it stays
// so. EBS status checks are ignored, as upstream. It runs whether or not
// an interruption queue is set; an account that denies the call is logged
// and the poll continues. Deciding which statuses are unhealthy is pure
// (Unhealthy); the package imports no other controller.
package instancestatus
