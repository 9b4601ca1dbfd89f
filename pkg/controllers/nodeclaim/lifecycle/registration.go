package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// Registered condition reasons.
const (
	ReasonNodeNotFound            = "NodeNotFound"
	ReasonMultipleNodesFound      = "MultipleNodesFound"
	ReasonRegistrationHookPending = "RegistrationHookPending"
)

// hookRequeue is how soon a pending registration hook is asked again.
const hookRequeue = 5 * time.Second

// registration joins the launched instance's Node to the NodeClaim.
type registration struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	recorder      events.EventRecorder
	// apiReader, when set, reads a Node straight from the API server to
	// retry a sync that failed on a stale cached copy.
	apiReader client.Reader
	health    *poolHealth
}

func (r *registration) reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim, state *pass) (reconcile.Result, bool, error) {
	conditions := nodeClaim.StatusConditions()
	if conditions.IsTrue(karpv1.ConditionTypeRegistered) || !conditions.IsTrue(karpv1.ConditionTypeLaunched) {
		return reconcile.Result{}, false, nil
	}
	nodes, err := nodesFor(ctx, r.kubeClient, nodeClaim)
	if err != nil {
		return reconcile.Result{}, false, err
	}
	switch len(nodes) {
	case 0:
		// The Node watch brings us back when it appears.
		conditions.SetUnknownWithReason(karpv1.ConditionTypeRegistered, ReasonNodeNotFound, "Node not registered with cluster")
		return reconcile.Result{}, false, nil
	case 1:
	default:
		conditions.SetFalse(karpv1.ConditionTypeRegistered, ReasonMultipleNodesFound, "Invariant violated, matched multiple nodes")
		return reconcile.Result{}, false, nil
	}
	node := &nodes[0]
	pending, err := r.hooksPending(ctx, nodeClaim)
	if err != nil {
		return reconcile.Result{}, false, err
	}
	if err := r.syncNode(ctx, nodeClaim, node, pending); err != nil {
		// Most failures are a taint list our cache has not caught up
		// with yet (the node lifecycle controller lifts not-ready right
		// as nodes register): try once more from the API's copy rather
		// than backing off until the cache catches up.
		if r.apiReader == nil {
			return reconcile.Result{}, false, err
		}
		fresh := &corev1.Node{}
		if getErr := r.apiReader.Get(ctx, client.ObjectKeyFromObject(node), fresh); getErr != nil {
			return reconcile.Result{}, false, errors.Join(err, getErr)
		}
		if err := r.syncNode(ctx, nodeClaim, fresh, pending); err != nil {
			return reconcile.Result{}, false, err
		}
		*node = *fresh
	}
	if pending != "" {
		conditions.SetUnknownWithReason(karpv1.ConditionTypeRegistered, ReasonRegistrationHookPending,
			fmt.Sprintf("Waiting on registration hook %s", pending))
		return reconcile.Result{RequeueAfter: hookRequeue}, false, nil
	}
	state.node = node
	nodeClaim.Status.NodeName = node.Name
	conditions.SetTrue(karpv1.ConditionTypeRegistered)
	pool, zone := nodeClaim.Labels[karpv1.NodePoolLabelKey], node.Labels[corev1.LabelTopologyZone]
	state.afterPatch(func() {
		metrics.NodesCreatedTotal.WithLabelValues(pool, zone).Inc()
		log.FromContext(ctx).Info("registered nodeclaim", "Node", klog.KObj(node), "providerID", nodeClaim.Status.ProviderID)
		r.recorder.Eventf(nodeClaim, node, corev1.EventTypeNormal, ReasonRegistered, "Register", "Status condition transitioned, Type: Registered, Status: True, Node: %s", node.Name)
		if err := r.health.record(ctx, nodeClaim, true); err != nil {
			log.FromContext(ctx).Error(err, "recording nodepool registration health")
		}
	})
	return reconcile.Result{}, false, nil
}

// hooksPending returns the name of the first provider registration hook
// that is not satisfied yet, or "".
func (r *registration) hooksPending(ctx context.Context, nodeClaim *karpv1.NodeClaim) (string, error) {
	provider, ok := cloudprovider.As[cloudprovider.LifecycleHooks](r.cloudProvider)
	if !ok {
		return "", nil
	}
	for _, hook := range provider.NodeLifecycleHooks() {
		res, err := hook.Registered(ctx, nodeClaim)
		if err != nil {
			return "", fmt.Errorf("running registration hook %s: %w", hook.Name(), err)
		}
		if res.Requeue {
			return hook.Name(), nil
		}
	}
	return "", nil
}

// syncNode puts the NodeClaim's labels, annotations, taints, finalizer and
// owner reference on the Node. Unless a registration hook is pending it
// also lifts the unregistered taint and labels the Node registered.
func (r *registration) syncNode(ctx context.Context, nodeClaim *karpv1.NodeClaim, node *corev1.Node, pendingHook string) error {
	stored := node.DeepCopy()
	controllerutil.AddFinalizer(node, karpv1.TerminationFinalizer)
	addOwnerReference(node, nodeClaim)
	if node.Labels[karpv1.NodeDoNotSyncTaintsLabelKey] != "true" {
		node.Spec.Taints = withTaints(node.Spec.Taints, nodeClaim.Spec.Taints...)
		node.Spec.Taints = withTaints(node.Spec.Taints, nodeClaim.Spec.StartupTaints...)
	}
	node.Labels = merged(node.Labels, nodeClaim.Labels)
	node.Annotations = merged(node.Annotations, nodeClaim.Annotations)
	if pendingHook == "" {
		hadTaint := slices.ContainsFunc(node.Spec.Taints, isUnregisteredTaint)
		if !hadTaint && stored.Labels[karpv1.NodeRegisteredLabelKey] != "true" {
			r.recorder.Eventf(node, nodeClaim, corev1.EventTypeWarning, ReasonUnregisteredTaintMissing, "Register",
				"Missing %s taint which prevents registration related race conditions on Karpenter-managed nodes", karpv1.UnregisteredTaintKey)
		}
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, isUnregisteredTaint)
		// A node of a multi-node batch trades the unregistered taint for
		// the batch hold in the same write, so the scheduler never sees
		// it open before its batch is (see package batchhold).
		if nodeClaim.Annotations[karpv1.ProvisioningBatchAnnotationKey] != "" && hadTaint &&
			node.Labels[karpv1.NodeDoNotSyncTaintsLabelKey] != "true" {
			node.Spec.Taints = withTaints(node.Spec.Taints, karpv1.BatchHoldNoScheduleTaint)
		}
		node.Labels[karpv1.NodeRegisteredLabelKey] = "true"
	}
	if equality.Semantic.DeepEqual(stored, node) {
		return nil
	}
	patch, err := nodeSyncPatch(stored, node)
	if err != nil {
		return err
	}
	if err := r.kubeClient.Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("syncing node %s: %w", node.Name, err)
	}
	return nil
}

func isUnregisteredTaint(t corev1.Taint) bool { return t.Key == karpv1.UnregisteredTaintKey }

// withTaints adds each taint whose key and effect the list lacks.
func withTaints(list []corev1.Taint, add ...corev1.Taint) []corev1.Taint {
	for _, t := range add {
		if !slices.ContainsFunc(list, func(have corev1.Taint) bool { return have.MatchTaint(&t) }) {
			list = append(list, t)
		}
	}
	return list
}

// addOwnerReference makes the NodeClaim an owner of the Node (not its
// controller: the Node's lifecycle is the kubelet's).
func addOwnerReference(node *corev1.Node, nodeClaim *karpv1.NodeClaim) {
	for _, ref := range node.OwnerReferences {
		if ref.UID == nodeClaim.UID {
			return
		}
	}
	node.OwnerReferences = append(node.OwnerReferences, metav1.OwnerReference{
		APIVersion:         karpv1.SchemeGroupVersion.String(),
		Kind:               "NodeClaim",
		Name:               nodeClaim.Name,
		UID:                nodeClaim.UID,
		BlockOwnerDeletion: ptr.To(true),
	})
}
