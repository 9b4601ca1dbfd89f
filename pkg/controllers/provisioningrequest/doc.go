// Package provisioningrequest serves Cluster Autoscaler's
// ProvisioningRequest API (autoscaling.x-k8s.io/v1) behind the
// ProvisioningRequest feature gate: it answers
// check-capacity.autoscaling.x-k8s.io requests from the existing nodes
// (launching nothing) and launches the NodeClaims of a
// best-effort-atomic-scale-up.autoscaling.x-k8s.io request all together or
// not at all, then holds them for the request's pods for the booking
// period.
//
// The decision (decide.go) is pure: which step a request needs from its
// conditions, its NodeClaims and the clock; and whether a solve placed
// every pod within the limits. The controller gathers (the request's pods
// from its PodTemplates, the cluster state, the NodePools and their
// instance types), runs pkg/simulation's solver and acts (creates or
// deletes NodeClaims, writes the conditions).
//
// Invariants:
//   - A request whose class karp does not serve is never written to.
//   - An atomic request's NodeClaims carry its UID (label) and how many
//     were created together (annotation): while fewer exist than were
//     created, the rest are deleted (rolled back) before any retry.
//   - While booked, the request's NodeClaims carry karpenter.sh/do-not-disrupt
//     (unless their NodePool's template set it), so disruption leaves them;
//     booking ends with BookingExpired, Failed or the request's deletion,
//     and the annotation is removed from the NodeClaim and its Node.
//
// Like every controller it imports no other controller package.
package provisioningrequest
