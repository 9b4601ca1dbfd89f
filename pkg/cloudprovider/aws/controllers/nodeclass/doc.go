// Package nodeclass keeps each EC2NodeClass's status current: the subnets,
// security groups and AMIs its selector terms resolve to, the instance
// profile its instances launch with, and the conditions that say whether it
// can be used. Ready is True only when AMIsReady, SubnetsReady,
// SecurityGroupsReady, InstanceProfileReady, CapacityReservationsReady and
// ValidationSucceeded all are; a NodeClass whose selectors match nothing is
// False with the upstream reason (SubnetsNotFound, SecurityGroupsNotFound,
// AMINotFound, UnsupportedAlias, ...), a message naming the terms that
// matched nothing, and a Warning event with the same reason. When some of
// a subnet or security group selector's terms match nothing while others
// match, the NodeClass stays Ready; the condition's message and a Warning
// event (SubnetSelectorTermsUnmatched, SecurityGroupSelectorTermsUnmatched,
// AMISelectorTermsUnmatched) name the terms, so a mistyped ID does not silently cost a zone.
//
// Each concern is a step run in upstream's order (AMIs, capacity
// reservations, subnets, security groups, instance profile, validation)
// on one in-memory copy; the status is patched once at the end with
// optimistic locking, and the NodeClass is requeued at the shortest
// interval any step asks for (a minute while something is not found). The
// discovery providers cache per NodeClass generation, so a spec change is
// resolved afresh on the reconcile it triggers.
//
// A discovery failure (EC2 or SSM unreachable, throttled) keeps what was
// resolved before: the status keeps its subnets, groups and AMIs, the
// condition keeps its status and says what failed, a Warning event reports
// it, and the error is returned so the reconcile is retried with backoff.
//
// Scope: instance profiles are looked up, not created. With
// spec.instanceProfile the named profile must exist in IAM; with spec.role
// an existing profile the role is attached to is used (one under karp's
// path /karpenter/ first, then by name). Until karp manages profiles
// itself, a role with no profile leaves InstanceProfileReady False
// (InstanceProfileNotFound). Capacity reservations are discovered when the
// ReservedCapacity feature gate is on (the operator passes a provider);
// with it off CapacityReservationsReady is True with none, and says so when
// terms are set. Validation checks
// the kubelet settings against the AMI family; the launch-permission dry
// runs upstream performs are not made.
package nodeclass
