// Package registrationhealth resets a NodePool's NodeRegistrationHealthy
// condition to Unknown, and forgets the pool's recorded registration
// outcomes, whenever the NodePool's spec (its generation) or its
// NodeClass's generation changes, and records the NodeClass generation
// seen in status.nodeClassObservedGeneration. The nodeclaim lifecycle
// moves the condition to True or False as NodeClaims register or time
// out (see pkg/state/nodepoolhealth). The condition is informational:
// it is not part of the NodePool's Ready and never stops provisioning.
// NodePools whose NodeClass is missing or of an unsupported kind are
// left alone.
package registrationhealth
