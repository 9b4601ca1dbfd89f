// Package registrationhealth is the one writer of a NodePool's
// NodeRegistrationHealthy condition. The nodeclaim lifecycle records each
// NodeClaim's outcome (registered, or failed to launch or register in
// time) in the shared nodepoolhealth.State, in memory; the State tells
// this controller, which reconciles the NodePool and copies the condition
// the State decided (upstream Karpenter's semantics: True once a
// registration leaves the pool healthy, False with the failure's reason
// once failures reach half the buffer of the last four outcomes).
//
// One writer per NodePool, through the work queue, means a scale-out of a
// thousand NodeClaims costs a handful of NodePool writes, one per
// condition change, not one per NodeClaim, and NodeClaims never race
// each other on the NodePool's status. The write is a server-side apply
// of the condition and status.nodeClassObservedGeneration only, so other
// controllers' status writes never make it conflict.
//
// The controller also resets the condition to Unknown, and forgets the
// pool's recorded outcomes, whenever the NodePool's spec (its generation)
// or its NodeClass's generation changes, and records the NodeClass
// generation seen. The condition is informational: it is not part of the
// NodePool's Ready and never stops provisioning. NodePools whose NodeClass
// is missing or of an unsupported kind are left alone.
package registrationhealth
