// Package interruption acts on simulated spot interruption notices for
// the kwok provider, modelled on EC2's two-minute warning.
//
// `karp interrupt NODE` annotates the Node with NoticeAnnotationKey, the
// time its instance will be reclaimed. On seeing it, this controller
//  1. marks the node's offering (instance type, zone, capacity type)
//     unavailable for a few minutes, so the replacement lands elsewhere;
//  2. sets the NodeClaim's termination deadline to the reclaim time, so
//     the drain finishes before the instance would vanish; and
//  3. with --replace-first (WithReplaceFirst), when half the notice holds
//     twice the pool's observed launch time plus slack, annotates the
//     NodeClaim to be replaced first, deleted half way through the notice
//     at the latest: the disruption controller launches the replacement
//     and deletes the NodeClaim once it is initialized, so the evicted
//     pods land on ready capacity. Otherwise it deletes the NodeClaim at
//     once: its pods become pending for the provisioner while the drain
//     runs, so the replacement launches in parallel with the drain.
//
// Steps 2 and 3 are pkg/interruption's ReplaceFirst and Terminate, which
// the AWS provider's SQS interruption controller uses too. Interruption is
// forceful: budgets do not apply (the capacity is going away regardless).
package interruption
