package kwok

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// Delete terminates the instance: it cancels a pending launch, or marks
// the Node terminated (TerminatedAnnotationKey) and deletes it. It returns
// NodeClaimNotFound once there is nothing left to terminate. A Node being
// deleted but not marked is still a running instance: its drain deleted it
// (the termination finalizer holds it), and its pods still run there.
//
// A NodeClaim whose providerID was never recorded (karp stopped between
// Create and the status write) is found by its name and UID, so that its
// instance does not leak.
func (c *CloudProvider) Delete(ctx context.Context, nodeClaim *karpv1.NodeClaim) error {
	name, err := c.instanceName(nodeClaim)
	if err != nil {
		return err
	}
	c.mu.Lock()
	// The NodeClaim is going: nothing will resume its launch.
	c.made.Delete(name)
	if p, ok := c.pending[name]; ok && c.owns(p.node, nodeClaim) {
		p.cancel()
		delete(c.pending, name)
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	node, err := c.liveNode(ctx, name)
	if err != nil {
		return err
	}
	if !c.owns(node, nodeClaim) {
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s belongs to another nodeclaim", name))
	}
	stored := node.DeepCopy()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[TerminatedAnnotationKey] = "true"
	if err := c.kubeClient.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
		if apierrors.IsNotFound(err) {
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s: %w", name, err))
		}
		return fmt.Errorf("marking node %s terminated: %w", name, err)
	}
	if !node.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := c.kubeClient.Delete(ctx, node, client.Preconditions{UID: &node.UID}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s: %w", name, err))
		}
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	return nil
}

// instanceName is the Node name of the NodeClaim's instance: from its
// providerID, else (never recorded) its name when it has a UID to match.
func (c *CloudProvider) instanceName(nodeClaim *karpv1.NodeClaim) (string, error) {
	if nodeClaim.Status.ProviderID != "" {
		return nodeNameOf(nodeClaim.Status.ProviderID)
	}
	if nodeClaim.UID == "" {
		return "", cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("nodeclaim %s has no providerID", nodeClaim.Name))
	}
	return nodeClaim.Name, nil
}

// owns reports whether node is nodeClaim's instance. Without a providerID
// the Node must carry the NodeClaim's UID, never just its name.
func (c *CloudProvider) owns(node *corev1.Node, nodeClaim *karpv1.NodeClaim) bool {
	if nodeClaim.Status.ProviderID == "" {
		return node.Annotations[NodeClaimUIDAnnotationKey] == string(nodeClaim.UID)
	}
	return sameNodeClaim(node, nodeClaim)
}

// Get returns the instance with the providerID.
func (c *CloudProvider) Get(ctx context.Context, providerID string) (*karpv1.NodeClaim, error) {
	name, err := nodeNameOf(providerID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	p, ok := c.pending[name]
	c.mu.Unlock()
	if ok {
		return p.nodeClaim.DeepCopy(), nil
	}
	node, err := c.liveNode(ctx, name)
	if err != nil {
		return nil, err
	}
	return instanceOf(node), nil
}

// liveNode gets a kwok Node whose instance was not terminated (see
// TerminatedAnnotationKey): one being deleted still runs until Delete
// marks it.
func (c *CloudProvider) liveNode(ctx context.Context, name string) (*corev1.Node, error) {
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s: %w", name, err))
		}
		return nil, fmt.Errorf("getting node %s: %w", name, err)
	}
	if !strings.HasPrefix(node.Spec.ProviderID, ProviderIDPrefix) {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s is not a kwok node", name))
	}
	if terminated(node) {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("node %s is terminated", name))
	}
	return node, nil
}

// List returns the pending launches and every live Node with a kwok
// providerID, whether or not a NodeClaim knows it, ordered by name.
func (c *CloudProvider) List(ctx context.Context) ([]*karpv1.NodeClaim, error) {
	nodes := &corev1.NodeList{}
	if err := c.kubeClient.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	byName := map[string]*karpv1.NodeClaim{}
	live := sets.New[string]()
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if !strings.HasPrefix(node.Spec.ProviderID, ProviderIDPrefix) {
			continue
		}
		live.Insert(node.Name)
		if !terminated(node) {
			byName[node.Name] = instanceOf(node)
		}
	}
	// Launches a previous process left waiting still exist in the
	// simulated cloud: restart them so List reports them as pending.
	if err := c.resumeLaunches(ctx, live); err != nil {
		return nil, err
	}
	c.mu.Lock()
	for name, p := range c.pending {
		byName[name] = p.nodeClaim.DeepCopy()
	}
	c.mu.Unlock()
	out := make([]*karpv1.NodeClaim, 0, len(byName))
	for _, nc := range byName {
		out = append(out, nc)
	}
	slices.SortFunc(out, func(a, b *karpv1.NodeClaim) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// terminated reports whether Delete terminated the Node's instance.
func terminated(node *corev1.Node) bool {
	return node.Annotations[TerminatedAnnotationKey] == "true"
}
