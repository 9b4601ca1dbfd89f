package lifecycle

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// ReasonLaunchFailed is the Launched condition's reason when Create failed
// without naming a reason of its own.
const ReasonLaunchFailed = "LaunchFailed"

// launch creates the instance once and hydrates the NodeClaim from it.
type launch struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	recorder      events.EventRecorder
}

func (l *launch) reconcile(ctx context.Context, nodeClaim *karpv1.NodeClaim, state *pass) (reconcile.Result, bool, error) {
	conditions := nodeClaim.StatusConditions()
	if conditions.IsTrue(karpv1.ConditionTypeLaunched) {
		return reconcile.Result{}, false, nil
	}
	created, err := l.cloudProvider.Create(ctx, nodeClaim)
	if err != nil {
		return l.failed(ctx, nodeClaim, err)
	}
	hydrate(nodeClaim, created)
	conditions.SetTrue(karpv1.ConditionTypeLaunched)
	labels := nodeClaim.Labels
	state.afterPatch(func() {
		log.FromContext(ctx).Info("launched nodeclaim",
			"providerID", nodeClaim.Status.ProviderID,
			"instanceType", labels[corev1.LabelInstanceTypeStable],
			"zone", labels[corev1.LabelTopologyZone],
			"capacityType", labels[karpv1.CapacityTypeLabelKey])
		l.recorder.Eventf(nodeClaim, nil, corev1.EventTypeNormal, ReasonLaunched, "Launch",
			"Launched %s (%s, %s)", labels[corev1.LabelInstanceTypeStable],
			labels[corev1.LabelTopologyZone], labels[karpv1.CapacityTypeLabelKey])
	})
	return reconcile.Result{}, false, nil
}

// failed handles a Create error: capacity and NodeClass errors delete the
// NodeClaim (the provisioner will place its pods elsewhere); anything else
// is recorded on the Launched condition and retried with backoff.
func (l *launch) failed(ctx context.Context, nodeClaim *karpv1.NodeClaim, err error) (reconcile.Result, bool, error) {
	switch {
	case cloudprovider.IsInsufficientCapacityError(err):
		l.recorder.Eventf(nodeClaim, nil, corev1.EventTypeWarning, ReasonInsufficientCapacityError, "Launch",
			"NodeClaim %s event: %s", nodeClaim.Name, truncate(err.Error()))
		log.FromContext(ctx).Info("deleting nodeclaim after insufficient capacity", "error", err.Error())
		return reconcile.Result{}, true, deleteNodeClaim(ctx, l.kubeClient, nodeClaim)
	case cloudprovider.IsNodeClassNotReadyError(err):
		l.recorder.Eventf(nodeClaim, nil, corev1.EventTypeWarning, ReasonNodeClassNotReady, "Launch",
			"NodeClaim %s event: %s", nodeClaim.Name, truncate(err.Error()))
		log.FromContext(ctx).Info("deleting nodeclaim whose nodeclass is not ready", "error", err.Error())
		return reconcile.Result{}, true, deleteNodeClaim(ctx, l.kubeClient, nodeClaim)
	}
	reason, message := ReasonLaunchFailed, err.Error()
	if ce, ok := cloudprovider.AsCreateError(err); ok {
		reason, message = ce.ConditionReason, ce.ConditionMessage
	}
	nodeClaim.StatusConditions().SetUnknownWithReason(karpv1.ConditionTypeLaunched, reason, truncate(message))
	return reconcile.Result{}, false, fmt.Errorf("launching nodeclaim %s: %w", klog.KObj(nodeClaim), err)
}

// hydrate copies what the provider launched onto the NodeClaim. Labels and
// annotations the NodeClaim already has win over the provider's.
func hydrate(nodeClaim, created *karpv1.NodeClaim) {
	nodeClaim.Labels = merged(created.Labels, nodeClaim.Labels)
	nodeClaim.Annotations = merged(created.Annotations, nodeClaim.Annotations)
	nodeClaim.Status.ProviderID = created.Status.ProviderID
	nodeClaim.Status.ImageID = created.Status.ImageID
	nodeClaim.Status.Capacity = created.Status.Capacity.DeepCopy()
	nodeClaim.Status.Allocatable = created.Status.Allocatable.DeepCopy()
}

// merged returns base overlaid with over (over wins), or nil when both are empty.
func merged(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := make(map[string]string, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}
