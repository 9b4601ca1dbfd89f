// Package lifecycle drives a NodeClaim from creation to a usable node:
// finalizer, launch, registration, initialization, and liveness.
//
// Each phase is a small type in its own file, run in order on an in-memory
// copy of the NodeClaim; the controller writes the result back with one
// metadata patch and one status patch (optimistic locking, so a conflicting
// writer makes the reconcile retry instead of overwriting).
//
//   - launch (launch.go): cloudProvider.Create, then hydrate providerID,
//     imageID, capacity, allocatable and labels. Insufficient capacity or
//     a NodeClass that is not ready deletes the NodeClaim so the
//     provisioner launches elsewhere. The Launched condition records
//     success; a restart before it was written retries Create, which every
//     provider makes idempotent per NodeClaim UID, so no second instance.
//   - registration (registration.go): find the Node by providerID, sync
//     labels, annotations, taints, startup taints, finalizer and owner
//     reference onto it, lift karpenter.sh/unregistered.
//   - initialization (initialization.go): Node Ready, startup and known
//     ephemeral taints gone, requested extended resources registered.
//   - liveness (liveness.go): delete NodeClaims not launched within 5
//     minutes or not registered within 15 minutes of launch.
//
// Registration and liveness record each outcome in the shared
// nodepoolhealth.State (poolhealth.go) and never write the NodePool: the
// nodepool registrationhealth controller is the one writer of its
// NodeRegistrationHealthy condition.
//
// Deleting NodeClaims belong to package termination; this controller
// ignores them. It must not import pkg/operator beyond its index names.
package lifecycle
