package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Initialized condition reasons.
const (
	ReasonNodeNotReady              = "NodeNotReady"
	ReasonStartupTaintsExist        = "StartupTaintsExist"
	ReasonKnownEphemeralTaintsExist = "KnownEphemeralTaintsExist"
	ReasonResourceNotRegistered     = "ResourceNotRegistered"
)

// initialization marks the NodeClaim Initialized once its Node is usable.
type initialization struct {
	kubeClient client.Client
	recorder   events.EventRecorder
}

func (i *initialization) reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim, state *pass) (reconcile.Result, bool, error) {
	conditions := nodeClaim.StatusConditions()
	if conditions.IsTrue(karpv1.ConditionTypeInitialized) || !conditions.IsTrue(karpv1.ConditionTypeRegistered) {
		return reconcile.Result{}, false, nil
	}
	node := state.node
	if node == nil {
		node = &corev1.Node{}
	}
	if err := i.get(ctx, nodeClaim.Status.NodeName, node, state.node != nil); err != nil {
		if apierrors.IsNotFound(err) {
			conditions.SetUnknownWithReason(karpv1.ConditionTypeInitialized, ReasonNodeNotFound, "Node not registered with cluster")
			return reconcile.Result{}, false, nil
		}
		return reconcile.Result{}, false, fmt.Errorf("getting node: %w", err)
	}
	if reason, message := notInitialized(nodeClaim, node); reason != "" {
		conditions.SetUnknownWithReason(karpv1.ConditionTypeInitialized, reason, message)
		return reconcile.Result{}, false, nil
	}
	if node.Labels[karpv1.NodeInitializedLabelKey] != "true" {
		stored := node.DeepCopy()
		node.Labels[karpv1.NodeInitializedLabelKey] = "true"
		// Only a label changes: no lock needed (kubelet status updates must
		// not make this conflict).
		if err := i.kubeClient.Patch(ctx, node, client.MergeFrom(stored)); err != nil {
			return reconcile.Result{}, false, fmt.Errorf("labeling node initialized: %w", err)
		}
	}
	conditions.SetTrue(karpv1.ConditionTypeInitialized)
	state.afterPatch(func() {
		log.FromContext(ctx).Info("initialized nodeclaim", "Node", klog.KObj(node), "allocatable", node.Status.Allocatable)
		i.recorder.Eventf(nodeClaim, node, corev1.EventTypeNormal, ReasonInitialized, "Initialize", "Status condition transitioned, Type: Initialized, Status: True")
	})
	return reconcile.Result{}, false, nil
}

// get reads the Node from the cache unless registration just wrote it
// (then the cache may still hold the version without the synced taints).
func (i *initialization) get(ctx context.Context, name string, node *corev1.Node, fresh bool) error {
	if fresh {
		return nil
	}
	return i.kubeClient.Get(ctx, client.ObjectKey{Name: name}, node)
}

// notInitialized returns why the Node is not usable yet ("" when it is):
// it must be Ready, without the NodeClaim's startup taints or a known
// ephemeral taint (scheduling.IsKnownEphemeralTaint), and have every requested extended resource.
func notInitialized(nodeClaim *karpv1.NodeClaim, node *corev1.Node) (reason, message string) {
	if !nodeReady(node) {
		return ReasonNodeNotReady, "Node status is NotReady"
	}
	for _, t := range nodeClaim.Spec.StartupTaints {
		if hasTaint(node, t) {
			return ReasonStartupTaintsExist, fmt.Sprintf("StartupTaint %q still exists", t.ToString())
		}
	}
	// The same list scheduling ignores on uninitialized nodes, so a pod
	// planned onto this Node past such a taint waits for it to go.
	for _, t := range node.Spec.Taints {
		if scheduling.IsKnownEphemeralTaint(t) {
			return ReasonKnownEphemeralTaintsExist, fmt.Sprintf("KnownEphemeralTaint %q still exists", t.ToString())
		}
	}
	var missing []string
	for name, q := range nodeClaim.Spec.Resources.Requests {
		if !isExtended(name) || q.IsZero() {
			continue
		}
		if have, ok := node.Status.Allocatable[name]; !ok || have.IsZero() {
			missing = append(missing, string(name))
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return ReasonResourceNotRegistered, fmt.Sprintf("Resource %q was requested but not registered", strings.Join(missing, ", "))
	}
	return "", ""
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaint(node *corev1.Node, t corev1.Taint) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(have corev1.Taint) bool { return have.MatchTaint(&t) })
}

// isExtended reports whether the resource is registered by a device
// plugin or similar (not cpu, memory, pods or storage, which every Node has).
func isExtended(name corev1.ResourceName) bool {
	switch name {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage, corev1.ResourceStorage:
		return false
	}
	return !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}
