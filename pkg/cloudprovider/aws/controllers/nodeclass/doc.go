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
// Instance profiles: with spec.instanceProfile the named profile must
// exist in IAM (InstanceProfileNotFound otherwise) and is never changed;
// with spec.role karp creates the NodeClass's own profile (package
// instanceprofile: upstream's name, path and tags), reuses it when it
// exists and attaches the role, replacing a different one. A role IAM does
// not know is InstanceProfileNotFound naming the role; other IAM failures
// (throttling, access denied) leave InstanceProfileReady Unknown, or True
// with the failure in its message when a profile was resolved before.
// Capacity reservations are discovered when the
// ReservedCapacity feature gate is on (the operator passes a provider);
// with it off CapacityReservationsReady is True with none, and says so when
// terms are set. Validation checks
// the kubelet settings against the AMI family, then (unless
// --disable-dry-run) that the controller may launch, as upstream: it
// creates the launch template of one instance type and dry-runs CreateFleet
// and RunInstances with it; a refused call is ValidationSucceeded False
// with CreateLaunchTemplateAuthCheckFailed, CreateFleetAuthCheckFailed or
// RunInstancesAuthCheckFailed. Verdicts are cached for 30 minutes per
// NodeClass status, spec, annotations and tags.
package nodeclass
