package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/singleton"
)

const (
	// LeakedInstanceAge is how old an instance without a NodeClaim must be
	// before it is deleted.
	LeakedInstanceAge = 30 * time.Second
	// fastInterval is the period of the first fastRuns passes (catching
	// leaks from a crash soon after start), interval the period after.
	fastInterval = 10 * time.Second
	fastRuns     = 20
	interval     = time.Minute
)

// Controller is the singleton garbage collector.
type Controller struct {
	kubeClient    client.Client
	apiReader     client.Reader
	cloudProvider cloudprovider.CloudProvider
	clock         clock.Clock
	runs          int
}

// NewController builds the garbage collector. apiReader reads uncached.
func NewController(kubeClient client.Client, apiReader client.Reader, cp cloudprovider.CloudProvider, clk clock.Clock) *Controller {
	return &Controller{kubeClient: kubeClient, apiReader: apiReader, cloudProvider: cp, clock: clk}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodeclaim.garbagecollection" }

// Register runs the singleton loop under the manager (leader only).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		WatchesRawSource(singleton.Source(c.Name())).
		Complete(conflict.Requeue(c))
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;delete

// Reconcile runs one collection pass and schedules the next.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	ctx = metrics.WithController(ctx, c.Name())
	c.runs++
	next := interval
	if c.runs <= fastRuns {
		next = fastInterval
	}
	if err := c.Collect(ctx); err != nil {
		// Retried with backoff; a requeue beside an error is dropped.
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: next}, nil
}

// instanceIdentifier is the optional capability of providers whose
// providerIDs may spell one instance in more than one way (AWS's carries
// the zone, which a malformed answer may have left out): InstanceID
// returns the instance's own ID, which the collector matches on.
type instanceIdentifier interface {
	InstanceID(providerID string) (string, error)
}

// instanceKey returns the key the collector matches providerIDs by: the
// provider's instance ID when it offers one, else the whole string.
func (c *Controller) instanceKey() func(providerID string) string {
	ider, ok := cloudprovider.As[instanceIdentifier](c.cloudProvider)
	return func(providerID string) string {
		if ok {
			if id, err := ider.InstanceID(providerID); err == nil {
				return id
			}
		}
		return providerID
	}
}

// Collect runs one pass: 1. list instances, NodeClaims and Nodes; 2.
// delete leaked instances; 3. delete NodeClaims whose instance is gone.
// Instances are matched to NodeClaims and Nodes by instance (see
// instanceKey), never by whole providerID strings.
func (c *Controller) Collect(ctx context.Context) error {
	instances, err := c.cloudProvider.List(ctx)
	if err != nil {
		return fmt.Errorf("listing instances: %w", err)
	}
	var nodeClaims karpv1.NodeClaimList
	if err := c.apiReader.List(ctx, &nodeClaims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	var nodes corev1.NodeList
	if err := c.kubeClient.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	key := c.instanceKey()
	claimed, launching := claimedInstances(nodeClaims.Items, nodes.Items, key)
	live := sets.New[string]()
	var errs []error
	for _, instance := range instances {
		live.Insert(key(instance.Status.ProviderID))
		// An instance named after a NodeClaim that has not recorded its
		// providerID yet is that NodeClaim's launch in flight, not a leak.
		if claimed.Has(key(instance.Status.ProviderID)) || (instance.Name != "" && launching.Has(instance.Name)) ||
			c.clock.Since(instance.CreationTimestamp.Time) < LeakedInstanceAge {
			continue
		}
		errs = append(errs, c.deleteLeakedInstance(ctx, instance, nodesOf(nodes.Items, key(instance.Status.ProviderID), key)))
	}
	for i := range nodeClaims.Items {
		nodeClaim := &nodeClaims.Items[i]
		errs = append(errs, c.collectNodeClaim(ctx, nodeClaim, live, key, nodesOf(nodes.Items, key(nodeClaim.Status.ProviderID), key)))
	}
	return errors.Join(errs...)
}

// claimedInstances returns the keys of the instances NodeClaims name,
// directly or through their Nodes' spec.providerID (a Node a NodeClaim
// owns or names), and the names of the NodeClaims still launching.
func claimedInstances(nodeClaims []karpv1.NodeClaim, nodes []corev1.Node, key func(string) string) (claimed, launching sets.Set[string]) {
	claimed, launching = sets.New[string](), sets.New[string]()
	uids, nodeNames := sets.New[types.UID](), sets.New[string]()
	for i := range nodeClaims {
		uids.Insert(nodeClaims[i].UID)
		if name := nodeClaims[i].Status.NodeName; name != "" {
			nodeNames.Insert(name)
		}
		if id := nodeClaims[i].Status.ProviderID; id != "" {
			claimed.Insert(key(id))
		} else {
			launching.Insert(nodeClaims[i].Name)
		}
	}
	for i := range nodes {
		node := &nodes[i]
		owned := slices.ContainsFunc(node.OwnerReferences, func(ref metav1.OwnerReference) bool { return uids.Has(ref.UID) })
		if node.Spec.ProviderID != "" && (owned || nodeNames.Has(node.Name)) {
			claimed.Insert(key(node.Spec.ProviderID))
		}
	}
	return claimed, launching
}

// nodesOf returns the Nodes whose providerID names the instance of the key.
func nodesOf(nodes []corev1.Node, instanceKey string, key func(string) string) []*corev1.Node {
	var out []*corev1.Node
	for i := range nodes {
		if nodes[i].Spec.ProviderID != "" && key(nodes[i].Spec.ProviderID) == instanceKey {
			out = append(out, &nodes[i])
		}
	}
	return out
}

// deleteLeakedInstance terminates an instance no NodeClaim names and
// deletes its Nodes.
func (c *Controller) deleteLeakedInstance(ctx context.Context, instance *karpv1.NodeClaim, nodes []*corev1.Node) error {
	if err := c.cloudProvider.Delete(ctx, instance); cloudprovider.IgnoreNodeClaimNotFoundError(err) != nil {
		return fmt.Errorf("deleting leaked instance %s: %w", instance.Status.ProviderID, err)
	}
	log.FromContext(ctx).Info("garbage collected instance without nodeclaim", "providerID", instance.Status.ProviderID)
	var errs []error
	for _, node := range nodes {
		errs = append(errs, c.deleteNode(ctx, node))
	}
	return errors.Join(errs...)
}

// deleteNode deletes a Node no NodeClaim owns and releases karp's finalizer
// (nothing else would).
func (c *Controller) deleteNode(ctx context.Context, node *corev1.Node) error {
	if controllerutil.ContainsFinalizer(node, karpv1.TerminationFinalizer) {
		stored := node.DeepCopy()
		controllerutil.RemoveFinalizer(node, karpv1.TerminationFinalizer)
		if err := c.kubeClient.Patch(ctx, node, client.StrategicMergeFrom(stored)); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("removing finalizer of node %s: %w", node.Name, err))
		}
	}
	if err := c.kubeClient.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", node.Name, err)
	}
	log.FromContext(ctx).Info("deleted node of leaked instance", "Node", klog.KObj(node))
	return nil
}

// collectNodeClaim deletes a Registered NodeClaim whose instance is not
// live any more, unless its Node is still Ready (the instance list may lag).
func (c *Controller) collectNodeClaim(ctx context.Context, nodeClaim *karpv1.NodeClaim, live sets.Set[string], key func(string) string, nodes []*corev1.Node) error {
	if !nodeClaim.DeletionTimestamp.IsZero() || nodeClaim.Status.ProviderID == "" || live.Has(key(nodeClaim.Status.ProviderID)) ||
		!nodeClaim.StatusConditions().IsTrue(karpv1.ConditionTypeRegistered) ||
		!cloudprovider.IsManaged(nodeClaim, c.cloudProvider, c.kubeClient.Scheme()) {
		return nil
	}
	for _, node := range nodes {
		if nodeReady(node) {
			return nil
		}
	}
	if err := c.kubeClient.Delete(ctx, nodeClaim); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting nodeclaim %s: %w", nodeClaim.Name, err)
	}
	log.FromContext(ctx).Info("garbage collected nodeclaim whose instance is gone", "NodeClaim", klog.KObj(nodeClaim),
		"providerID", nodeClaim.Status.ProviderID, "reason", metrics.ReasonGarbageCollected)
	return nil
}

func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
