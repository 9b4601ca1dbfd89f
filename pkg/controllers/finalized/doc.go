// Package finalized records a Finalized event each time a finalizer
// leaves a NodeClaim, a Node or a NodePool, as upstream Karpenter's status
// controllers (operatorpkg) do: a Normal event with reason Finalized and
// the note "Finalized <finalizer>" on the object, for example "Finalized
// karpenter.sh/termination" when termination releases a NodeClaim or a
// Node. A finalizer removed from an object that is then gone (the usual
// case: the last finalizer goes and the API server deletes the object) is
// reported on the object as it was last seen. Several finalizers that
// leave together give one event each: karp's recorder (pkg/events) keeps
// events with different notes apart.
//
// The controllers remember, per object, the finalizers they last saw; an
// object without finalizers is not remembered. What they miss while
// stopped (a finalizer removed before this process saw the object) is not
// reported. They write nothing but events.
package finalized
