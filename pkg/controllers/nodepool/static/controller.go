package static

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/render"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/solverinput"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// Controller keeps static NodePools at their replicas.
type Controller struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	cluster       *state.Cluster
	clock         clock.Clock
	recorder      events.EventRecorder
	// solverOpts are the provisioner's solver settings (minValues policy).
	solverOpts simulation.Options
}

var _ reconcile.ObjectReconciler[*karpv1.NodePool] = (*Controller)(nil)

// NewController builds the controller over the cluster state the
// provisioner and the disruption controller share.
func NewController(kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, cluster *state.Cluster,
	clk clock.Clock, recorder events.EventRecorder, solverOpts simulation.Options) *Controller {
	return &Controller{kubeClient: kubeClient, cloudProvider: cloudProvider, cluster: cluster, clock: clk,
		recorder: recorder, solverOpts: solverOpts}
}

// Name is the controller's name.
func (c *Controller) Name() string { return "nodepool.static" }

// Register watches NodePools and their NodeClaims.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&karpv1.NodePool{}).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(byPoolLabel)).
		Complete(conflict.Requeue(reconcile.AsReconciler(mgr.GetClient(), c)))
}

func byPoolLabel(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[karpv1.NodePoolLabelKey]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}

// Requeue periods: while the state is not synced or a disruption is being
// started on one of the NodePool's nodes; and a resync, since a NodeClaim
// event may have come before the state held it.
const (
	waitPeriod   = time.Second
	resyncPeriod = time.Minute
)

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/status,verbs=patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=limitranges;namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings a static NodePool to its replicas: gather its nodes,
// decide, launch or delete, and record ReplicasServed.
func (c *Controller) Reconcile(ctx context.Context, nodePool *karpv1.NodePool) (reconcile.Result, error) {
	if nodePool.Spec.Replicas == nil || !nodePool.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	synced, err := c.cluster.Synced(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	// 1. Gather the NodePool's nodes; wait while a disruption is being
	// started on one (its replacement may not be counted yet).
	members, ids := c.members(nodePool.Name)
	if !synced || c.cluster.DisruptionStarting(ids...) {
		return reconcile.Result{RequeueAfter: waitPeriod}, nil
	}
	// 2. Decide.
	replicas, nodeLimit := *nodePool.Spec.Replicas, nodeLimit(nodePool)
	d := decide(replicas, nodeLimit, members)
	served, reason, message := d.condition(replicas, nodeLimit)
	// 3. Act.
	var errs []error
	if d.create > 0 {
		if why, err := c.launch(ctx, nodePool, d.create); err != nil {
			errs = append(errs, err)
		} else if why != "" {
			reason, message = why, reasonMessage(why, nodePool)
		}
	}
	if len(d.remove) > 0 {
		errs = append(errs, c.remove(ctx, nodePool, d, replicas))
	}
	if d.capped {
		c.recorder.Eventf(nodePool, nil, corev1.EventTypeWarning, ReasonNodeLimitReached, "Scale",
			"spec.replicas is %d but limits.nodes is %d: the NodePool keeps at most %d nodes", replicas, nodeLimit, d.target)
	}
	// 4. Record the outcome.
	if err := c.patchCondition(ctx, nodePool, served, reason, message); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		// Retried with backoff; a requeue beside an error is dropped.
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: resyncPeriod}, nil
}

// members lists the NodePool's nodes from the cluster state, with the
// StateNode IDs.
func (c *Controller) members(nodePool string) ([]member, []string) {
	var out []member
	var ids []string
	now := c.clock.Now()
	for _, sn := range c.cluster.Nodes() {
		if !sn.Managed() || sn.NodePool() != nodePool {
			continue
		}
		nc := sn.NodeClaim
		conds := nc.StatusConditions()
		m := member{name: nc.Name, leaving: sn.MarkedForDeletion, launched: nc.Status.ProviderID != "",
			initialized: sn.Initialized(), drifted: conds.IsTrue(karpv1.ConditionTypeDrifted), created: nc.CreationTimestamp.Time,
			protected: nc.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true" ||
				sn.Node != nil && sn.Node.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true"}
		for _, pod := range sn.Pods {
			if !state.IsReschedulable(pod) {
				continue
			}
			m.pods++
			if scheduling.DoNotDisruptActive(pod, now) {
				m.protected = true
			}
		}
		out = append(out, m)
		ids = append(ids, sn.ID())
	}
	return out, ids
}

// nodeLimit is the NodePool's limits.nodes, -1 when unset.
func nodeLimit(nodePool *karpv1.NodePool) int64 {
	if q, ok := nodePool.Spec.Limits[corev1.ResourceName("nodes")]; ok {
		return q.Value()
	}
	return -1
}

// launch creates count NodeClaims from the NodePool's template. It returns
// the ReplicasServed reason when nothing can be launched (a NodePool that
// is not Ready, a template no instance type satisfies), with a warning
// event.
func (c *Controller) launch(ctx context.Context, nodePool *karpv1.NodePool, count int) (string, error) {
	if !nodePool.StatusConditions().IsTrue(karpv1.ConditionTypeReady) {
		return ReasonNodePoolNotReady, nil
	}
	types, err := c.cloudProvider.GetInstanceTypes(ctx, nodePool)
	if err != nil {
		return "", fmt.Errorf("listing instance types of nodepool %s: %w", nodePool.Name, err)
	}
	nodes, _ := c.cluster.Snapshot()
	in := simulation.Input{Nodes: nodes, DaemonSets: c.cluster.DaemonSets(), Options: c.solverOpts}
	if err := solverinput.Cluster(ctx, c.kubeClient, &in); err != nil {
		return "", err
	}
	claims, why := simulation.StaticNodeClaims(in, &simulation.NodePool{NodePool: nodePool, InstanceTypes: types}, count)
	if why != "" {
		c.recorder.Eventf(nodePool, nil, corev1.EventTypeWarning, ReasonNoCompatibleInstanceTypes, "Scale", "%s", why)
		return ReasonNoCompatibleInstanceTypes, nil
	}
	var names []string
	var errs []error
	for _, nc := range claims {
		obj := render.NodeClaim(nc)
		if err := c.kubeClient.Create(ctx, obj); err != nil {
			errs = append(errs, fmt.Errorf("creating nodeclaim for static nodepool %s: %w", nodePool.Name, err))
			continue
		}
		// The state holds it at once, so the next reconcile counts it.
		c.cluster.UpdateNodeClaim(obj)
		metrics.NodeClaimsCreatedTotal.WithLabelValues(metrics.ReasonProvisioned, nodePool.Name,
			strconv.FormatBool(nc.MinValuesRelaxed)).Inc()
		names = append(names, obj.Name)
		log.FromContext(ctx).Info("created nodeclaim", "NodeClaim", obj.Name, "NodePool", nodePool.Name,
			"instanceType", nc.InstanceType.Name, "instanceTypes", len(nc.InstanceTypes))
	}
	if len(names) > 0 {
		c.recorder.Eventf(nodePool, nil, corev1.EventTypeNormal, ReasonScalingUp, "Scale",
			"launching %d NodeClaim(s) for %d replicas: %v", len(names), *nodePool.Spec.Replicas, names)
	}
	return "", errors.Join(errs...)
}

// remove deletes the surplus NodeClaims the decision chose; the
// termination controllers drain them. Each is marked for deletion in the
// state at once, so the next reconcile does not count it.
func (c *Controller) remove(ctx context.Context, nodePool *karpv1.NodePool, d decision, replicas int64) error {
	var errs []error
	var removed []string
	for _, name := range d.remove {
		nc := &karpv1.NodeClaim{}
		nc.Name = name
		if err := c.kubeClient.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s of static nodepool %s: %w", name, nodePool.Name, err))
			continue
		}
		c.cluster.MarkForDeletion(state.NodeClaimID(name))
		removed = append(removed, name)
		log.FromContext(ctx).Info("deleting nodeclaim", "NodeClaim", name, "NodePool", nodePool.Name, "replicas", replicas)
	}
	if len(removed) > 0 {
		c.recorder.Eventf(nodePool, nil, corev1.EventTypeNormal, ReasonScalingDown, "Scale",
			"deleting %d NodeClaim(s) for %d replicas: %v", len(removed), replicas, removed)
	}
	return errors.Join(errs...)
}

// reasonMessage is the ReplicasServed message of a launch that could not
// happen.
func reasonMessage(reason string, nodePool *karpv1.NodePool) string {
	if reason == ReasonNodePoolNotReady {
		return "the NodePool is not Ready: no node is launched for it"
	}
	return "no NodeClaim can be launched from the template (see the " + ReasonNoCompatibleInstanceTypes + " event on NodePool " + nodePool.Name + ")"
}

// patchCondition sets ReplicasServed and patches the status when it
// changed.
func (c *Controller) patchCondition(ctx context.Context, nodePool *karpv1.NodePool, served bool, reason, message string) error {
	stored := nodePool.DeepCopy()
	conditions := nodePool.StatusConditions().WithClock(c.clock)
	if served {
		conditions.SetTrueWithReason(karpv1.ConditionTypeReplicasServed, reason, message)
	} else {
		conditions.SetFalse(karpv1.ConditionTypeReplicasServed, reason, message)
	}
	if equality.Semantic.DeepEqual(stored.Status, nodePool.Status) {
		return nil
	}
	if err := c.kubeClient.Status().Patch(ctx, nodePool, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching nodepool status: %w", err))
	}
	return nil
}
