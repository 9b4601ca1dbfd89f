package overlay

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// CloudProvider decorates a provider with the NodeOverlays the Store
// holds: GetInstanceTypes returns the NodePool's instance types with them
// applied, and Create launches from those types when the provider can
// (cloudprovider.InstanceTypeLauncher). Other methods pass through;
// optional capabilities are reached through Unwrap.
type CloudProvider struct {
	cloudprovider.CloudProvider
	reader client.Reader
	store  *Store
}

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// Decorate wraps cp. reader lists NodeOverlays and reads NodePools (the
// manager's cache).
func Decorate(cp cloudprovider.CloudProvider, reader client.Reader) *CloudProvider {
	return &CloudProvider{CloudProvider: cp, reader: reader, store: NewStore()}
}

// Unwrap returns the decorated provider (its instance types are the ones
// without overlays, which the NodeOverlay controller evaluates).
func (c *CloudProvider) Unwrap() cloudprovider.CloudProvider { return c.CloudProvider }

// Store is where the NodeOverlay controller publishes its evaluations.
func (c *CloudProvider) Store() *Store { return c.store }

// GetInstanceTypes returns the NodePool's instance types with the
// overlays applied, or an UnevaluatedNodePoolError while the controller
// has not evaluated the NodeOverlays as they are now (since start, since
// one was created, changed or deleted, or since the NodePool appeared).
func (c *CloudProvider) GetInstanceTypes(ctx context.Context, nodePool *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	types, err := c.CloudProvider.GetInstanceTypes(ctx, nodePool)
	if err != nil {
		return nil, err
	}
	snap, err := c.current(ctx, nodePool.Name)
	if err != nil {
		return nil, err
	}
	return Apply(snap.applied, nodePool, types), nil
}

// current returns the latest evaluation if it is up to date for the
// NodePool.
func (c *CloudProvider) current(ctx context.Context, nodePool string) (*snapshot, error) {
	snap := c.store.load()
	if snap == nil {
		return nil, cloudprovider.NewUnevaluatedNodePoolError(nodePool, "the nodeoverlay controller has not evaluated the overlays since start")
	}
	if !snap.nodePools.Has(nodePool) {
		return nil, cloudprovider.NewUnevaluatedNodePoolError(nodePool, "the nodepool is newer than the last evaluation")
	}
	list := &karpv1alpha1.NodeOverlayList{}
	if err := c.reader.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing nodeoverlays: %w", err)
	}
	if len(list.Items) != len(snap.generations) {
		return nil, cloudprovider.NewUnevaluatedNodePoolError(nodePool, "nodeoverlays were created or deleted since the last evaluation")
	}
	for i := range list.Items {
		if gen, ok := snap.generations[list.Items[i].Name]; !ok || gen != list.Items[i].Generation {
			return nil, cloudprovider.NewUnevaluatedNodePoolError(nodePool,
				fmt.Sprintf("nodeoverlay %s changed since the last evaluation", list.Items[i].Name))
		}
	}
	return snap, nil
}

// Create launches from the NodePool's overlaid instance types when the
// provider can, so that it picks the offering cheapest after the overlays
// and gives the node the extended resources they add. The decision of
// which types the NodeClaim allows was made on fresh prices; the launch
// uses the latest evaluation even if the overlays changed since.
func (c *CloudProvider) Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	launcher, ok := cloudprovider.As[cloudprovider.InstanceTypeLauncher](c.CloudProvider)
	name := nodeClaim.Labels[karpv1.NodePoolLabelKey]
	snap := c.store.load()
	if !ok || name == "" || snap == nil {
		return c.CloudProvider.Create(ctx, nodeClaim)
	}
	nodePool := &karpv1.NodePool{}
	if err := c.reader.Get(ctx, client.ObjectKey{Name: name}, nodePool); err != nil {
		if apierrors.IsNotFound(err) {
			return c.CloudProvider.Create(ctx, nodeClaim)
		}
		return nil, fmt.Errorf("getting nodepool %s: %w", name, err)
	}
	if ref := nodeClaim.Spec.NodeClassRef; ref != nil && nodePool.Spec.Template.Spec.NodeClassRef != nil &&
		ref.Name != nodePool.Spec.Template.Spec.NodeClassRef.Name {
		// The NodePool moved to another NodeClass since the NodeClaim was
		// made: its instance types are not the NodeClaim's.
		return c.CloudProvider.Create(ctx, nodeClaim)
	}
	types, err := c.CloudProvider.GetInstanceTypes(ctx, nodePool)
	if err != nil {
		return nil, fmt.Errorf("listing instance types of nodepool %s: %w", name, err)
	}
	return launcher.CreateFrom(ctx, nodeClaim, Apply(snap.applied, nodePool, types))
}
