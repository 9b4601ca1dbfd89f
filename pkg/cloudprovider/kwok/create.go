package kwok

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// Annotations the provider writes.
const (
	// NodeClaimUIDAnnotationKey on a kwok Node holds the UID of the
	// NodeClaim it was launched for; a retried Create finds it by it.
	NodeClaimUIDAnnotationKey = kwokv1alpha1.Group + "/nodeclaim-uid"
	// NodeClassHashAnnotationKey on a NodeClaim (and its Node) holds the
	// hash of the KWOKNodeClass spec it was launched with.
	NodeClassHashAnnotationKey = kwokv1alpha1.Group + "/kwoknodeclass-hash"
	// NodeClassHashVersionAnnotationKey holds the hash algorithm version;
	// hashes of other versions are never compared.
	NodeClassHashVersionAnnotationKey = kwokv1alpha1.Group + "/kwoknodeclass-hash-version"
	// NodeClassHashVersion is the current hash algorithm version. v2:
	// hashstructure (see NodeClassHash) instead of FNV-1a of the JSON.
	// Hashes of another version are never compared; the nodeclass hash
	// controller re-stamps them, so a version change never reads as drift.
	NodeClassHashVersion = "v2"
	// TerminatedAnnotationKey on a kwok Node records that Delete
	// terminated its instance. The Node is the instance, and it is being
	// deleted from the moment its drain starts; without the mark a Node
	// still draining looked terminated too, and the termination of a Node
	// that was NotReady for a moment (kwok's lease late on a loaded
	// machine) took the path for a vanished instance and deleted its pods
	// without evictions, whatever their PodDisruptionBudgets.
	TerminatedAnnotationKey = kwokv1alpha1.Group + "/terminated"
)

// ReasonNodeClassNotSupported is the Launched condition reason of a
// NodeClaim whose nodeClassRef is not a KWOKNodeClass.
const ReasonNodeClassNotSupported = "NodeClassNotSupported"

// maxRetryBackoff caps the wait between attempts to create a delayed Node.
const maxRetryBackoff = 10 * time.Second

// pendingLaunch is a Node waiting out its registration delay.
type pendingLaunch struct {
	node      *corev1.Node
	nodeClaim *karpv1.NodeClaim // what Create returned
	done      chan struct{}
	once      sync.Once
}

func (p *pendingLaunch) cancel() { p.once.Do(func() { close(p.done) }) }

func (p *pendingLaunch) cancelled() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Create launches a fake instance for the NodeClaim: it resolves the
// KWOKNodeClass, picks the cheapest available compatible offering and
// creates a Node named after the NodeClaim, now or after the registration
// delay. A retry for the same NodeClaim returns the instance already made.
func (c *CloudProvider) Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	return c.create(ctx, nodeClaim, c.instanceTypes())
}

// CreateFrom is Create choosing among the given instance types (the
// NodePool's with NodeOverlays applied: their prices order the choice and
// their allocatable becomes the Node's) instead of the catalog.
func (c *CloudProvider) CreateFrom(ctx context.Context, nodeClaim *karpv1.NodeClaim, instanceTypes []*cloudprovider.InstanceType) (*karpv1.NodeClaim, error) {
	return c.create(ctx, nodeClaim, instanceTypes)
}

func (c *CloudProvider) create(ctx context.Context, nodeClaim *karpv1.NodeClaim, instanceTypes []*cloudprovider.InstanceType) (*karpv1.NodeClaim, error) {
	// 1. A retried Create finds the instance it launched before.
	if existing, err := c.existing(ctx, nodeClaim); err != nil || existing != nil {
		return existing, err
	}
	// 2. The KWOKNodeClass must exist and be Ready.
	nodeClass, err := c.resolveNodeClass(ctx, nodeClaim)
	if err != nil {
		return nil, err
	}
	// 3. The cheapest available compatible offering, unless the simulated
	// cloud has run out of it.
	launch, err := c.choose(nodeClaim, instanceTypes)
	if err != nil {
		return nil, err
	}
	// 4. The Node stands in for the instance; create it now or later.
	node := buildNode(nodeClaim, nodeClass, launch)
	hydrated := hydrate(nodeClaim, node)
	delay := c.delay
	if nodeClass.Spec.NodeRegistrationDelay != nil {
		delay = nodeClass.Spec.NodeRegistrationDelay.Duration
	}
	if delay > 0 {
		return c.startLaunch(ctx, node, hydrated, delay)
	}
	if err := c.kubeClient.Create(ctx, node); err != nil {
		if apierrors.IsAlreadyExists(err) {
			existing, err := c.existing(ctx, nodeClaim)
			if err == nil && existing == nil {
				// Created before, by this NodeClaim's earlier launch; the
				// cache does not show it yet.
				return nil, fmt.Errorf("node %s exists but is not in the cache yet", node.Name)
			}
			return existing, err
		}
		return nil, fmt.Errorf("creating node %s: %w", node.Name, err)
	}
	c.markMade(node.Name)
	return hydrated, nil
}

// existing returns the instance already launched for the NodeClaim, or nil.
func (c *CloudProvider) existing(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	c.mu.Lock()
	p, ok := c.pending[nodeClaim.Name]
	c.mu.Unlock()
	if ok {
		if !sameNodeClaim(p.node, nodeClaim) {
			return nil, fmt.Errorf("node %s is being launched for another nodeclaim", nodeClaim.Name)
		}
		return p.nodeClaim.DeepCopy(), nil
	}
	node := &corev1.Node{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: nodeClaim.Name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting node %s: %w", nodeClaim.Name, err)
	}
	if !sameNodeClaim(node, nodeClaim) {
		return nil, fmt.Errorf("node %s exists for another nodeclaim", node.Name)
	}
	if !node.DeletionTimestamp.IsZero() {
		return nil, fmt.Errorf("node %s of this nodeclaim is terminating", node.Name)
	}
	return hydrate(nodeClaim, node), nil
}

// sameNodeClaim reports whether node was launched for nodeClaim (by UID
// when both know one).
func sameNodeClaim(node *corev1.Node, nodeClaim *karpv1.NodeClaim) bool {
	uid := node.Annotations[NodeClaimUIDAnnotationKey]
	return uid == "" || nodeClaim.UID == "" || uid == string(nodeClaim.UID)
}

func (c *CloudProvider) resolveNodeClass(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*kwokv1alpha1.KWOKNodeClass, error) {
	ref := nodeClaim.Spec.NodeClassRef
	if ref == nil || ref.Group != kwokv1alpha1.Group || ref.Kind != kwokv1alpha1.Kind {
		err := fmt.Errorf("nodeClassRef %v is not a %s", ref, kwokv1alpha1.Kind)
		return nil, cloudprovider.NewCreateError(err, ReasonNodeClassNotSupported, err.Error())
	}
	nodeClass := &kwokv1alpha1.KWOKNodeClass{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: ref.Name}, nodeClass); err != nil {
		if apierrors.IsNotFound(err) {
			// As upstream: a missing NodeClass launches nothing, like a
			// cloud with no capacity, so the NodeClaim is replaced.
			return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("resolving %s %s: %w", kwokv1alpha1.Kind, ref.Name, err))
		}
		return nil, fmt.Errorf("resolving %s %s: %w", kwokv1alpha1.Kind, ref.Name, err)
	}
	if !nodeClass.DeletionTimestamp.IsZero() {
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("%s %s is terminating", kwokv1alpha1.Kind, ref.Name))
	}
	if ready := nodeClass.StatusConditions().Get(kwokv1alpha1.ConditionTypeReady); ready == nil || ready.Status != metav1.ConditionTrue {
		msg := "has no Ready condition"
		if ready != nil {
			msg = fmt.Sprintf("is Ready=%s (%s: %s)", ready.Status, ready.Reason, ready.Message)
		}
		return nil, cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("%s %s %s", kwokv1alpha1.Kind, ref.Name, msg))
	}
	return nodeClass, nil
}

// choose returns the best launch for the NodeClaim. When the simulated
// cloud refuses it, the offering goes into the unavailable cache, so that
// the next scheduling round falls back to another one.
func (c *CloudProvider) choose(nodeClaim *karpv1.NodeClaim, instanceTypes []*cloudprovider.InstanceType) (cloudprovider.Launch, error) {
	candidates := cloudprovider.LaunchCandidates(instanceTypes, nodeClaim, nil)
	if len(candidates) == 0 {
		return cloudprovider.Launch{}, cloudprovider.NewInsufficientCapacityError(
			fmt.Errorf("no available offering satisfies nodeclaim %s", nodeClaim.Name))
	}
	best := candidates[0]
	c.mu.Lock()
	refused := c.insufficient.Has(best.Key())
	c.mu.Unlock()
	if refused {
		c.unavailable.MarkUnavailable(best.Key())
		return cloudprovider.Launch{}, cloudprovider.NewInsufficientCapacityError(
			fmt.Errorf("launching nodeclaim %s", nodeClaim.Name), best.Key())
	}
	return best, nil
}

// startLaunch records a delayed launch and starts its goroutine, unless one
// is already pending for the Node.
func (c *CloudProvider) startLaunch(ctx context.Context, node *corev1.Node, hydrated *karpv1.NodeClaim, delay time.Duration) (*karpv1.NodeClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("the kwok provider is closed")
	}
	if p, ok := c.pending[node.Name]; ok {
		return p.nodeClaim.DeepCopy(), nil
	}
	p := &pendingLaunch{node: node, nodeClaim: hydrated, done: make(chan struct{})}
	c.pending[node.Name] = p
	c.launches.Add(1)
	go c.launch(context.WithoutCancel(ctx), p, delay)
	return hydrated.DeepCopy(), nil
}

// launch waits out the delay, then creates the Node, retrying with backoff
// until it exists or the launch is cancelled (Delete, Close).
func (c *CloudProvider) launch(ctx context.Context, p *pendingLaunch, delay time.Duration) {
	defer c.launches.Done()
	defer c.finish(p)
	if !c.wait(p, delay) {
		return
	}
	backoff := c.backoff
	for {
		err := c.kubeClient.Create(ctx, p.node.DeepCopy())
		if err == nil && p.cancelled() {
			// Delete raced the creation: the instance must not outlive it.
			err = client.IgnoreNotFound(c.kubeClient.Delete(ctx, p.node.DeepCopy()))
		}
		if err == nil || apierrors.IsAlreadyExists(err) {
			if err == nil || !p.cancelled() {
				c.markMade(p.node.Name)
			}
			return
		}
		log.FromContext(ctx).Error(err, "creating delayed kwok node, retrying", "Node", klog.KObj(p.node), "backoff", backoff)
		if !c.wait(p, backoff) {
			return
		}
		backoff = min(2*backoff, maxRetryBackoff)
	}
}

// wait sleeps for d on the provider's clock; false when cancelled first.
func (c *CloudProvider) wait(p *pendingLaunch, d time.Duration) bool {
	timer := c.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C():
		return true
	case <-p.done:
		return false
	}
}

// markMade records that the Node of a launch exists.
func (c *CloudProvider) markMade(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.made.Insert(name)
}

func (c *CloudProvider) finish(p *pendingLaunch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[p.node.Name] == p {
		delete(c.pending, p.node.Name)
	}
}

// buildNode returns the Node standing in for the launched instance.
func buildNode(nodeClaim *karpv1.NodeClaim, nodeClass *kwokv1alpha1.KWOKNodeClass, l cloudprovider.Launch) *corev1.Node {
	labels := cloudprovider.LaunchLabels(nodeClaim, l)
	labels[kwokv1alpha1.NodeClassLabelKey] = nodeClass.Name
	labels[corev1.LabelHostname] = nodeClaim.Name
	labels[kwokv1alpha1.KWOKNodeLabelKey] = kwokv1alpha1.KWOKNodeLabelValue
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   nodeClaim.Name,
			Labels: labels,
			Annotations: map[string]string{
				// kwok fakes a kubelet only for Nodes carrying this.
				kwokv1alpha1.KWOKNodeAnnotationKey: kwokv1alpha1.KWOKNodeAnnotationValue,
				NodeClaimUIDAnnotationKey:          string(nodeClaim.UID),
				NodeClassHashAnnotationKey:         NodeClassHash(nodeClass),
				NodeClassHashVersionAnnotationKey:  NodeClassHashVersion,
			},
		},
		Spec: corev1.NodeSpec{
			ProviderID: providerID(nodeClaim.Name),
			Taints:     []corev1.Taint{karpv1.UnregisteredNoExecuteTaint},
		},
		Status: corev1.NodeStatus{
			Capacity:    l.InstanceType.Capacity.DeepCopy(),
			Allocatable: l.InstanceType.Allocatable.DeepCopy(),
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    labels[corev1.LabelArchStable],
				OperatingSystem: labels[corev1.LabelOSStable],
			},
		},
	}
}

// hydrate returns the NodeClaim with what the Node says was launched.
func hydrate(nodeClaim *karpv1.NodeClaim, node *corev1.Node) *karpv1.NodeClaim {
	out := nodeClaim.DeepCopy()
	instance := instanceOf(node)
	out.Labels = instance.Labels
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	for k, v := range instance.Annotations {
		out.Annotations[k] = v
	}
	out.Status.ProviderID = instance.Status.ProviderID
	out.Status.ImageID = instance.Status.ImageID
	out.Status.Capacity = instance.Status.Capacity
	out.Status.Allocatable = instance.Status.Allocatable
	return out
}

// instanceOf describes a kwok Node as a NodeClaim: the labels karp syncs
// (not the hostname or kwok's marker), the NodeClass hash, providerID,
// imageID, capacity and allocatable.
func instanceOf(node *corev1.Node) *karpv1.NodeClaim {
	labels := map[string]string{}
	for k, v := range node.Labels {
		if k != corev1.LabelHostname && k != kwokv1alpha1.KWOKNodeLabelKey {
			labels[k] = v
		}
	}
	annotations := map[string]string{}
	for _, k := range []string{NodeClassHashAnnotationKey, NodeClassHashVersionAnnotationKey} {
		if v, ok := node.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:              node.Name,
			UID:               types.UID(node.Annotations[NodeClaimUIDAnnotationKey]),
			Labels:            labels,
			Annotations:       annotations,
			CreationTimestamp: node.CreationTimestamp,
		},
		Status: karpv1.NodeClaimStatus{
			ProviderID:  node.Spec.ProviderID,
			ImageID:     ImageID,
			Capacity:    node.Status.Capacity.DeepCopy(),
			Allocatable: node.Status.Allocatable.DeepCopy(),
		},
	}
}
