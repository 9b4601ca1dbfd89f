// Package interruption is the AWS provider's SQS interruption controller
// (upstream's "interruption", run only when --interruption-queue is set,
// and only on the leader).
//
// It long-polls the queue EventBridge feeds with EC2 and AWS Health
// events, up to 10 messages at a time, and handles a batch's messages
// concurrently:
//   - spot interruption warning: the spot offering (instance type, zone) is
//     marked unavailable so the replacement lands elsewhere, and the
//     NodeClaim is deleted with the reclaim time (the event's time plus two
//     minutes) as its termination deadline;
//   - AWS Health scheduled change for EC2, instance stopping / stopped,
//     shutting-down / terminated, capacity reservation interruption: the
//     NodeClaim is deleted;
//   - rebalance recommendation: an event; for a spot NodeClaim whose
//     NodePool has the annotation karp.sh/spot-rebalance: replace, the
//     spot offering is also marked unavailable and then the NodeClaim's
//     RebalanceRecommended condition set True. The disruption controller
//     does the rest (replacement first, drain once it is initialized,
//     within the Drifted budgets). A NodeClaim already marked, being
//     disrupted or deleting is left alone, so a repeated recommendation
//     changes nothing.
//
// Deleting the NodeClaim hands the node to the core's graceful
// termination (cordon, drain within the deadline, terminate) while the
// provisioner launches the replacement for the evicted pods in parallel;
// the shared steps live in pkg/interruption. Every message handled is
// deleted from the queue, foreign and no-op ones included; a malformed one
// is logged, counted as message_type="malformed" and deleted. A message
// whose handling failed stays and reappears after its visibility timeout.
//
// The actions live in Handler, which the instance status poll
// (subpackage instancestatus) shares: the statuses EC2 reports impaired or
// with a scheduled event become messages of the kinds instance_status,
// system_status and event_status and act as the queue's would.
//
// Messages are matched to NodeClaims and Nodes by the instance ID of their
// providerID; instances karp did not launch are skipped. The package
// decides nothing about scheduling and imports no other controller.
package interruption
