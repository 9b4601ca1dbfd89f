package provisioningrequest

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/render"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// claimsOf lists the request's NodeClaims from the API server and counts them.
func (c *Controller) claimsOf(ctx context.Context, pr *autoscalingv1.ProvisioningRequest) ([]karpv1.NodeClaim, claims, error) {
	var list karpv1.NodeClaimList
	if err := c.apiReader.List(ctx, &list, client.MatchingLabels{RequestUIDLabelKey: string(pr.UID)}); err != nil {
		return nil, claims{}, fmt.Errorf("listing nodeclaims of provisioningrequest: %w", err)
	}
	var out claims
	for _, nc := range list.Items {
		if n, err := strconv.Atoi(nc.Annotations[LaunchSizeAnnotationKey]); err == nil && n > out.expected {
			out.expected = n
		}
		if !nc.DeletionTimestamp.IsZero() {
			out.deleting++
			continue
		}
		out.present++
		if nc.Status.ProviderID != "" {
			out.launched++
		}
	}
	return list.Items, out, nil
}

// launch creates the request's NodeClaims, each marked with the request
// and booked (karpenter.sh/do-not-disrupt) until the booking ends. A
// failed create leaves fewer than the launch size: the next reconcile
// rolls the others back.
func (c *Controller) launch(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, claims []*simulation.NodeClaim, pods int) error {
	var errs []error
	var names []string
	for _, nc := range claims {
		obj := render.NodeClaim(nc)
		obj.Labels[RequestUIDLabelKey] = string(pr.UID)
		obj.Annotations[RequestAnnotationKey] = pr.Namespace + "/" + pr.Name
		obj.Annotations[LaunchSizeAnnotationKey] = strconv.Itoa(len(claims))
		obj.Annotations[PodCountAnnotationKey] = strconv.Itoa(pods)
		if _, set := obj.Annotations[karpv1.DoNotDisruptAnnotationKey]; !set {
			obj.Annotations[karpv1.DoNotDisruptAnnotationKey] = "true"
			obj.Annotations[BookedAnnotationKey] = "true"
		}
		if err := c.kubeClient.Create(ctx, obj); err != nil {
			errs = append(errs, fmt.Errorf("creating nodeclaim for provisioningrequest %s/%s: %w", pr.Namespace, pr.Name, err))
			break
		}
		// The state holds it at once, so the provisioner counts its room
		// for the request's pods.
		c.cluster.UpdateNodeClaim(obj)
		metrics.NodeClaimsCreatedTotal.WithLabelValues(metrics.ReasonProvisioned, nc.NodePool.Name,
			strconv.FormatBool(nc.MinValuesRelaxed)).Inc()
		names = append(names, obj.Name)
	}
	if len(names) > 0 {
		log.FromContext(ctx).Info("created nodeclaims for provisioningrequest", "ProvisioningRequest", klog.KObj(pr),
			"nodeclaims", len(names), "of", len(claims))
		c.event(pr, corev1.EventTypeNormal, "ScaleUp", "launching %d NodeClaim(s) for the request: %v", len(names), names)
	}
	return errors.Join(errs...)
}

// rollback deletes the NodeClaims left of a launch some of which are gone
// (a create failed, or the provider had no capacity and the NodeClaim was
// deleted), and holds back the next attempt.
func (c *Controller) rollback(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, owned []karpv1.NodeClaim) (reconcile.Result, error) {
	var errs []error
	var deleted []string
	for i := range owned {
		nc := &owned[i]
		if !nc.DeletionTimestamp.IsZero() {
			continue
		}
		if err := c.kubeClient.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s of provisioningrequest: %w", nc.Name, err))
			continue
		}
		c.cluster.MarkForDeletion(state.NodeClaimID(nc.Name))
		deleted = append(deleted, nc.Name)
	}
	rollbacks.WithLabelValues(classLabel(pr)).Inc()
	c.holdBack(pr.UID)
	msg := fmt.Sprintf("some NodeClaims of the atomic launch did not launch; deleted the other %d: %v", len(deleted), deleted)
	log.FromContext(ctx).Info("rolled back provisioningrequest launch", "ProvisioningRequest", klog.KObj(pr), "deleted", len(deleted))
	c.notFound(pr, msg)
	if err := errors.Join(errs...); err != nil {
		// Retried with backoff; a requeue beside an error is dropped.
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: retryPeriod}, nil
}

// release ends the booking of the request's NodeClaims (the request
// key's, and uid's when set): karpenter.sh/do-not-disrupt that karp added
// goes from the NodeClaim and its Node.
func (c *Controller) release(ctx context.Context, key types.NamespacedName, uid types.UID) error {
	var list karpv1.NodeClaimList
	if err := c.kubeClient.List(ctx, &list, client.HasLabels{RequestUIDLabelKey}); err != nil {
		return fmt.Errorf("listing nodeclaims of provisioningrequests: %w", err)
	}
	var errs []error
	for i := range list.Items {
		nc := &list.Items[i]
		if nc.Annotations[BookedAnnotationKey] != "true" ||
			nc.Annotations[RequestAnnotationKey] != key.String() && (uid == "" || nc.Labels[RequestUIDLabelKey] != string(uid)) {
			continue
		}
		if err := c.unbook(ctx, nc); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unbook removes the booking annotations from a NodeClaim and its Node.
func (c *Controller) unbook(ctx context.Context, nc *karpv1.NodeClaim) error {
	if nc.Status.NodeName != "" {
		node := &corev1.Node{}
		if err := c.kubeClient.Get(ctx, types.NamespacedName{Name: nc.Status.NodeName}, node); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("getting node %s: %w", nc.Status.NodeName, err)
		} else if err == nil && node.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true" {
			stored := node.DeepCopy()
			delete(node.Annotations, karpv1.DoNotDisruptAnnotationKey)
			if err := c.kubeClient.Patch(ctx, node, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("patching node %s: %w", node.Name, err)
			}
		}
	}
	stored := nc.DeepCopy()
	delete(nc.Annotations, karpv1.DoNotDisruptAnnotationKey)
	delete(nc.Annotations, BookedAnnotationKey)
	if err := c.kubeClient.Patch(ctx, nc, client.MergeFrom(stored)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("patching nodeclaim %s: %w", nc.Name, err)
	}
	log.FromContext(ctx).Info("released booked nodeclaim", "NodeClaim", klog.KObj(nc))
	return nil
}
