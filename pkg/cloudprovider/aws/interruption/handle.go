package interruption

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/interruption"
)

// handle acts on every instance of the message that has a NodeClaim;
// instances of other clusters (or never launched by karp) are skipped.
func (c *Handler) handle(ctx context.Context, msg Message, owned *cluster) error {
	if msg.Kind == KindNoOp {
		return nil
	}
	var errs []error
	for _, id := range msg.InstanceIDs {
		nodeClaim, ok := owned.nodeClaims[id]
		if !ok {
			log.FromContext(ctx).V(1).Info("no nodeclaim for the instance of an interruption message", "kind", msg.Kind, "instanceID", id)
			continue
		}
		// Copies: another worker may handle a message about the same
		// instance.
		var node *corev1.Node
		if n, ok := owned.nodes[id]; ok {
			node = n.DeepCopy()
		}
		if err := c.handleInstance(ctx, msg, id, nodeClaim.DeepCopy(), node); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// handleInstance publishes the message's event and takes its action on one
// NodeClaim (and its Node, nil if not registered).
func (c *Handler) handleInstance(ctx context.Context, msg Message, instanceID string, nodeClaim *karpv1.NodeClaim, node *corev1.Node) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("kind", msg.Kind, "instanceID", instanceID, "NodeClaim", klog.KObj(nodeClaim)))
	notice, ok := notices[msg.Kind]
	if !ok {
		return nil
	}
	c.publish(nodeClaim, node, notice.eventType, notice.reason, notice.message)
	var reclaimAt time.Time
	switch msg.Kind {
	case KindSpotInterrupted:
		// The replacement must not land on the offering being reclaimed.
		c.markOffering(ctx, nodeClaim, msg.Kind)
		reclaimAt = c.clock.Now().Add(SpotNoticePeriod)
		if !msg.Time.IsZero() {
			reclaimAt = msg.Time.Add(SpotNoticePeriod)
		}
		if c.replaceFirst {
			by, ok, err := interruption.ReplaceByForNodeClaim(ctx, c.kubeClient, nodeClaim, c.clock.Now(), reclaimAt)
			if err != nil {
				return err
			}
			if ok {
				return c.replaceFirstBy(ctx, nodeClaim, node, reclaimAt, by)
			}
		}
	case KindInstanceStatus, KindSystemStatus:
		// A failed status check: terminate forcefully, the drain ending now
		// (upstream's ForcefulTermination).
		reclaimAt = c.clock.Now()
	case KindCapacityReservationInterrupted:
		if id := nodeClaim.Labels[awsv1.LabelCapacityReservationID]; id != "" && c.reservations != nil {
			c.reservations.MarkUnavailable(id)
		}
	case KindRebalanceRecommendation:
		// Replaced gracefully by the disruption controller when the
		// NodePool opted in; otherwise the event is all.
		return c.rebalance(ctx, nodeClaim)
	}
	deleted, err := interruption.Terminate(ctx, c.kubeClient, nodeClaim, reclaimAt, string(msg.Kind))
	if err != nil || !deleted {
		return err
	}
	log.FromContext(ctx).Info("initiating delete from interruption message")
	c.recorder.Eventf(nodeClaim, nil, corev1.EventTypeWarning, interruption.ReasonTerminatingOnInterruption, "Interrupt",
		"Interruption triggered termination for the NodeClaim")
	if node != nil {
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, interruption.ReasonTerminatingOnInterruption, "Interrupt",
			"Interruption triggered termination for the Node")
	}
	return nil
}

// publish records the event on the NodeClaim and its Node.
func (c *Handler) publish(nodeClaim *karpv1.NodeClaim, node *corev1.Node, eventType, reason, message string) {
	c.recorder.Eventf(nodeClaim, nil, eventType, reason, "Interrupt", message)
	if node != nil {
		c.recorder.Eventf(node, nil, eventType, reason, "Interrupt", message)
	}
}

// replaceFirstBy marks the NodeClaim to be replaced first and deleted by
// the given time, its drain ending at reclaimAt.
func (c *Handler) replaceFirstBy(ctx context.Context, nodeClaim *karpv1.NodeClaim, node *corev1.Node, reclaimAt, by time.Time) error {
	marked, err := interruption.ReplaceFirst(ctx, c.kubeClient, nodeClaim, reclaimAt, by, string(KindSpotInterrupted))
	if err != nil || !marked {
		return err
	}
	log.FromContext(ctx).Info("replacing interrupted nodeclaim first", "replaceBy", by.UTC().Format(time.RFC3339),
		"reclaimAt", reclaimAt.UTC().Format(time.RFC3339))
	msg := fmt.Sprintf("Interruption triggered termination: launching the replacement first, draining the node once it is initialized or at %s at the latest",
		by.UTC().Format(time.RFC3339))
	c.recorder.Eventf(nodeClaim, nil, corev1.EventTypeWarning, interruption.ReasonTerminatingOnInterruption, "Interrupt", "%s", msg)
	if node != nil {
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, interruption.ReasonTerminatingOnInterruption, "Interrupt", "%s", msg)
	}
	return nil
}
