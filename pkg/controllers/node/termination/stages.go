package termination

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/index"
)

// Condition reasons on the NodeClaim.
const (
	reasonDraining                      = "Draining"
	reasonAwaitingVolumeDetachment      = "AwaitingVolumeDetachment"
	reasonTerminationGracePeriodElapsed = "TerminationGracePeriodElapsed"
)

// drain evicts the pods of the first non-empty group and force-deletes
// pods out of time; it is done when no pod is left to wait for.
func (c *Controller) drain(ctx context.Context, p *pass) (reconcile.Result, bool, error) {
	pods, err := c.podsOn(ctx, p.node)
	if err != nil {
		return reconcile.Result{}, false, err
	}
	p.pods = pods
	plan := planDrain(p.pods, p.deadline, p.now)
	for _, pod := range plan.forceDelete {
		if err := c.forceDelete(ctx, pod, p); err != nil {
			return reconcile.Result{}, false, err
		}
	}
	c.queue.Add(disruptionReason(p.nodeClaim), plan.evict...)
	if len(plan.waiting) == 0 {
		if p.nodeClaim != nil && !p.nodeClaim.StatusConditions().IsTrue(karpv1.ConditionTypeDrained) {
			nodesDrainedTotal.WithLabelValues(p.nodeClaim.Labels[karpv1.NodePoolLabelKey]).Inc()
		}
		c.setCondition(p, karpv1.ConditionTypeDrained, true, "", "")
		return reconcile.Result{}, true, nil
	}
	msg := fmt.Sprintf("%d pod(s) still on the node", len(plan.waiting))
	if len(plan.blocked) > 0 {
		msg = fmt.Sprintf("%s; %s", msg, blockedMessage(plan.blocked, p.deadline))
		c.eventOnce(p.node, ReasonFailedDraining, msg)
	}
	c.setCondition(p, karpv1.ConditionTypeDrained, false, reasonDraining, msg)
	wait := drainRecheck
	if !plan.nextForce.IsZero() && plan.nextForce.Sub(p.now) < wait {
		wait = max(plan.nextForce.Sub(p.now), 10*time.Millisecond)
	}
	return reconcile.Result{RequeueAfter: wait}, false, nil
}

func blockedMessage(blocked []*corev1.Pod, deadline time.Time) string {
	names := make([]string, 0, 3)
	for _, pod := range blocked[:min(3, len(blocked))] {
		names = append(names, pod.Namespace+"/"+pod.Name)
	}
	msg := fmt.Sprintf("%d pod(s) have the %s annotation (%s", len(blocked), karpv1.DoNotDisruptAnnotationKey, strings.Join(names, ", "))
	if len(blocked) > len(names) {
		msg += ", ..."
	}
	if deadline.IsZero() {
		return msg + ") and the NodeClaim has no terminationGracePeriod"
	}
	return msg + ") until " + deadline.UTC().Format(time.RFC3339)
}

// forceDelete deletes a pod whose grace period no longer fits before the
// node's deadline, PDBs and do-not-disrupt notwithstanding. The grace
// period it gets is what is left until the deadline (at least 1 s).
func (c *Controller) forceDelete(ctx context.Context, pod *corev1.Pod, p *pass) error {
	grace := int64(math.Max(1, math.Ceil(p.deadline.Sub(p.now).Seconds())))
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds <= grace {
		return nil // Already deleted with a grace period that ends in time.
	}
	deleted, err := c.deletePod(ctx, pod, grace)
	if err != nil {
		return fmt.Errorf("at the termination deadline: %w", err)
	}
	if !deleted {
		return nil
	}
	c.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonDisrupted, "Delete",
		"Deleting the pod to accommodate the terminationTime %s of the node. The pod was granted %d seconds of grace-period of its %d terminationGracePeriodSeconds. This bypasses the PDB of the pod and the do-not-disrupt annotation.",
		p.deadline.UTC().Format(time.RFC3339), grace, int64(podGracePeriod(pod).Seconds()))
	log.FromContext(ctx).Info("deleted pod at the termination deadline", "Pod", klog.KObj(pod), "Node", klog.KObj(p.node))
	return nil
}

// deleteStrandedPods deletes, with no grace period, the pods still bound
// to a NotReady node whose instance is gone. None of them runs anywhere,
// and nothing else would remove them before the node's release: the pod
// garbage collector of kube-controller-manager deletes pods of a missing
// node only after 40 s, so their controllers would wait that long (and
// up to its 20 s period more) before replacing them. PDBs and
// do-not-disrupt are not consulted: the pods are already gone with their
// instance.
func (c *Controller) deleteStrandedPods(ctx context.Context, node *corev1.Node) error {
	pods, err := c.podsOn(ctx, node)
	if err != nil {
		return err
	}
	for i := range pods {
		pod := &pods[i]
		deleted, err := c.deletePod(ctx, pod, 0)
		if err != nil {
			return fmt.Errorf("its instance is gone: %w", err)
		}
		if deleted {
			log.FromContext(ctx).Info("deleted pod of a node whose instance is gone", "Pod", klog.KObj(pod), "Node", klog.KObj(node))
		}
	}
	return nil
}

// podsOn lists the pods bound to the node, from the API server.
func (c *Controller) podsOn(ctx context.Context, node *corev1.Node) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := c.apiReader.List(ctx, &list, client.MatchingFields{index.PodNodeName: node.Name}); err != nil {
		return nil, fmt.Errorf("listing pods on node: %w", err)
	}
	return list.Items, nil
}

// deletePod deletes this very pod (its UID) with the grace period given;
// deleted is false when it is gone already or the name is a newer pod's.
func (c *Controller) deletePod(ctx context.Context, pod *corev1.Pod, grace int64) (deleted bool, err error) {
	uid := pod.UID
	err = c.kubeClient.Delete(ctx, pod, client.GracePeriodSeconds(grace), client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("deleting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return true, nil
}

// awaitVolumeDetachment waits until the attach-detach controller removed
// the node's VolumeAttachments, except those of pods the drain leaves
// running. Past the deadline it no longer waits.
func (c *Controller) awaitVolumeDetachment(ctx context.Context, p *pass) (reconcile.Result, bool, error) {
	if p.deadlinePassed() {
		c.setCondition(p, karpv1.ConditionTypeVolumesDetached, false, reasonTerminationGracePeriodElapsed,
			"terminationGracePeriod elapsed before volumes detached")
		return reconcile.Result{}, true, nil
	}
	var list storagev1.VolumeAttachmentList
	if err := c.apiReader.List(ctx, &list); err != nil {
		return reconcile.Result{}, false, fmt.Errorf("listing volume attachments: %w", err)
	}
	kept, err := c.volumesOfStayingPods(ctx, p)
	if err != nil {
		return reconcile.Result{}, false, err
	}
	var waiting []string
	for i := range list.Items {
		va := &list.Items[i]
		if va.Spec.NodeName != p.node.Name {
			continue
		}
		if pv := va.Spec.Source.PersistentVolumeName; pv != nil && kept.Has(*pv) {
			continue
		}
		waiting = append(waiting, va.Name)
	}
	if len(waiting) == 0 {
		c.setCondition(p, karpv1.ConditionTypeVolumesDetached, true, "", "")
		return reconcile.Result{}, true, nil
	}
	msg := fmt.Sprintf("Awaiting deletion of %d VolumeAttachment(s) bound to the node", len(waiting))
	c.eventOnce(p.node, ReasonAwaitingVolumeDetachment, msg)
	c.setCondition(p, karpv1.ConditionTypeVolumesDetached, false, reasonAwaitingVolumeDetachment, msg)
	return reconcile.Result{RequeueAfter: volumeRecheck}, false, nil
}

// volumesOfStayingPods names the PersistentVolumes used by pods the drain
// leaves on the node (tolerating the disrupted taint, mirror pods): their
// attachments stay until the instance goes.
func (c *Controller) volumesOfStayingPods(ctx context.Context, p *pass) (sets.Set[string], error) {
	out := sets.New[string]()
	for i := range p.pods {
		pod := &p.pods[i]
		if isWaitingEviction(pod, p.now) || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			var pvc corev1.PersistentVolumeClaim
			key := types.NamespacedName{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}
			if err := c.apiReader.Get(ctx, key, &pvc); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, fmt.Errorf("getting persistent volume claim: %w", err)
			}
			if pvc.Spec.VolumeName != "" {
				out.Insert(pvc.Spec.VolumeName)
			}
		}
	}
	return out, nil
}

// awaitInstanceTermination deletes the instance and waits until the cloud
// provider no longer has it.
func (c *Controller) awaitInstanceTermination(ctx context.Context, p *pass) (reconcile.Result, bool, error) {
	providerID := p.node.Spec.ProviderID
	if providerID == "" {
		return reconcile.Result{}, true, nil
	}
	target := p.nodeClaim
	if target == nil {
		target = &karpv1.NodeClaim{Status: karpv1.NodeClaimStatus{ProviderID: providerID}}
	}
	if err := c.cloudProvider.Delete(ctx, target); err != nil {
		if cloudprovider.IsNodeClaimNotFoundError(err) {
			return reconcile.Result{}, true, nil
		}
		return reconcile.Result{}, false, fmt.Errorf("terminating instance: %w", err)
	}
	if _, err := c.cloudProvider.Get(ctx, providerID); cloudprovider.IsNodeClaimNotFoundError(err) {
		return reconcile.Result{}, true, nil
	}
	c.setCondition(p, karpv1.ConditionTypeInstanceTerminating, true, "", "")
	return reconcile.Result{RequeueAfter: instanceRecheck}, false, nil
}

func (c *Controller) setCondition(p *pass, conditionType string, status bool, reason, msg string) {
	if p.nodeClaim == nil {
		return
	}
	conds := p.nodeClaim.StatusConditions().WithClock(c.clock)
	if status {
		conds.SetTrue(conditionType)
		return
	}
	conds.SetFalse(conditionType, reason, msg)
}

// disruptionReason is the reason the NodeClaim is being disrupted, for
// the drained-pods metric ("" when it was simply deleted).
func disruptionReason(nodeClaim *karpv1.NodeClaim) string {
	if nodeClaim == nil {
		return ""
	}
	if cond := nodeClaim.StatusConditions().Get(karpv1.ConditionTypeDisruptionReason); cond != nil && cond.Status == "True" {
		return cond.Reason
	}
	return ""
}
