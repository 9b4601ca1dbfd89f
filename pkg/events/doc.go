// Package events records karp's Kubernetes events through the
// events.k8s.io/v1 API.
//
// It replaces client-go's events broadcaster, which folds every event with
// the same type, reason, action, reporting controller and regarding object
// into one series for up to six minutes and keeps the series' first note: a
// pod told "NodePool ... not Ready" would keep that note while the real
// reason changed. Here the note is part of the series key, as it is in
// client-go's core/v1 correlator and upstream Karpenter's recorder:
//
//   - the same note again within Window on the same object is one event
//     whose series count grows (no event spam);
//   - a different note is a new event, written at once.
//
// Invariants: Eventf never blocks on the API server (events queue, and are
// dropped when the queue is full); one goroutine (Start) writes every event,
// so the series cache needs no lock. The package imports no cloud SDK.
package events
