// Package nodepoolhealth remembers, per NodePool, whether its last few
// NodeClaims launched and registered, and decides from that what the
// NodePool's NodeRegistrationHealthy condition should be (Unknown, True,
// or False with the failure's reason). It is pure and in memory: the
// nodeclaim lifecycle records outcomes, and the nodepool
// registrationhealth controller, told of each change through OnChange,
// is the one writer that copies the condition to the NodePool and
// resets the outcomes when the NodePool or its NodeClass changes.
package nodepoolhealth
