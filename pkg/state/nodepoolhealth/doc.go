// Package nodepoolhealth remembers, per NodePool, whether its last few
// NodeClaims launched and registered, and decides from that whether the
// NodePool's NodeRegistrationHealthy condition is Unknown, True or False.
// It is pure: the nodeclaim lifecycle records outcomes and the
// nodepool registrationhealth controller resets them.
package nodepoolhealth
