package cloudprovider

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// CloudProvider launches and terminates the instances behind NodeClaims.
// All methods are safe for concurrent use.
type CloudProvider interface {
	// Create launches an instance satisfying the NodeClaim's requirements
	// and returns a NodeClaim hydrated with what was launched: providerID,
	// labels (instance type, zone, capacity type and every single-valued
	// requirement), annotations to merge, capacity, allocatable and imageID.
	// Retrying Create for the same NodeClaim (same UID) must not launch a
	// second instance. Errors: InsufficientCapacityError when no offering
	// could be launched, NodeClassNotReadyError when the NodeClass cannot be
	// used yet, CreateError to set a specific Launched condition reason.
	Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error)
	// Delete terminates the NodeClaim's instance (by status.providerID). It
	// returns a NodeClaimNotFoundError once the instance is gone; callers
	// retry until then.
	Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error
	// Get returns the instance with the providerID as a NodeClaim, or a
	// NodeClaimNotFoundError.
	Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error)
	// List returns every instance the provider manages, including ones no
	// NodeClaim knows (garbage collection relies on it).
	List(ctx context.Context) ([]*karpv1.NodeClaim, error)
	// GetInstanceTypes returns every instance type the NodePool may use,
	// including types whose offerings are currently unavailable. The values
	// are shared and must not be mutated.
	GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*InstanceType, error)
	// IsDrifted returns a non-empty reason when the launched NodeClaim no
	// longer matches its NodeClass.
	IsDrifted(ctx context.Context, nodeClaim *karpv1.NodeClaim) (DriftReason, error)
	// RepairPolicies lists the Node conditions after which a node is
	// replaced; empty disables node repair for this provider.
	RepairPolicies() []RepairPolicy
	// Name is the provider's short name ("kwok", "fake"), used in metrics
	// and logs.
	Name() string
	// GetSupportedNodeClasses returns an empty object of every NodeClass
	// kind the provider reads; the first is the default.
	GetSupportedNodeClasses() []NodeClass
}

// NodeClass is a provider's NodeClass object: a Kubernetes object with
// status conditions whose Ready condition says whether NodePools can launch
// with it.
type NodeClass interface {
	client.Object
	StatusConditions() karpv1.ConditionSet
}

// NodeLifecycleHookResult tells registration whether to wait for a hook.
type NodeLifecycleHookResult struct {
	// Requeue is true while the hook is not satisfied yet.
	Requeue bool
}

// NodeLifecycleHook gates a NodeClaim's registration on provider work (for
// example attaching network interfaces) that must finish first.
type NodeLifecycleHook interface {
	Name() string
	Registered(ctx context.Context, nodeClaim *karpv1.NodeClaim) (NodeLifecycleHookResult, error)
}

// LifecycleHooks is an optional capability: providers implementing it have
// their hooks consulted before a NodeClaim is marked Registered.
type LifecycleHooks interface {
	NodeLifecycleHooks() []NodeLifecycleHook
}

// As finds the optional capability T on cp or on any provider it
// decorates (followed through Unwrap() CloudProvider, as the metrics and
// leader-election decorators offer).
func As[T any](cp CloudProvider) (T, bool) {
	for cp != nil {
		if t, ok := cp.(T); ok {
			return t, true
		}
		wrapper, ok := cp.(interface{ Unwrap() CloudProvider })
		if !ok {
			break
		}
		cp = wrapper.Unwrap()
	}
	var zero T
	return zero, false
}

// InstanceTypeLauncher is an optional capability: a provider implementing
// it can launch from instance types the caller gives (the NodePool's, with
// NodeOverlay prices and capacity applied) instead of its own catalog, so
// that it prefers the offering that is cheapest after the overlays and
// gives the node the extended resources they add.
type InstanceTypeLauncher interface {
	CreateFrom(ctx context.Context, nodeClaim *karpv1.NodeClaim, instanceTypes []*InstanceType) (*karpv1.NodeClaim, error)
}
