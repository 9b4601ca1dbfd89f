// Package podevents records on each NodeClaim the last time a pod was
// bound to its node, finished on it or started terminating there
// (status.lastPodEventTime). consolidateAfter counts from that moment
// (pkg/controllers/nodeclaim/disruption).
//
// The event time is read from the pod itself (its PodScheduled transition,
// its deletion request, its last condition change), not from when karp
// saw it, so a controller restart that replays every pod does not make
// every node look freshly busy. Writes are at most one per node per
// Dedupe interval.
package podevents
