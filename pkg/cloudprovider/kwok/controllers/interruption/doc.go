// Package interruption acts on simulated spot interruption notices for
// the kwok provider, modelled on EC2's two-minute warning.
//
// `karp interrupt NODE` annotates the Node with NoticeAnnotationKey, the
// time its instance will be reclaimed. On seeing it, this controller
//  1. marks the node's offering (instance type, zone, capacity type)
//     unavailable for a few minutes, so the replacement lands elsewhere;
//  2. sets the NodeClaim's termination deadline to the reclaim time, so
//     the drain finishes before the instance would vanish; and
//  3. deletes the NodeClaim at once. Its pods become pending for the
//     provisioner while the drain runs, so the replacement launches in
//     parallel with the drain, well before the notice ends.
//
// Steps 2 and 3 are pkg/interruption's Terminate, which the AWS provider's
// SQS interruption controller uses too. Interruption is forceful: budgets
// do not apply (the capacity is going away regardless).
package interruption
