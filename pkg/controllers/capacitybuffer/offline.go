package capacitybuffer

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// Resolution is what the controller makes of one CapacityBuffer, for
// tools that resolve buffers without running it (`karp simulate`).
type Resolution struct {
	// Active is false for a buffer of another provisioning strategy: the
	// controller leaves it to another autoscaler (no room, no status).
	Active bool
	// Buffer is the room the provisioner keeps: Buffer.Replicas pods of
	// its template (capped at buffers.MaxReplicas); valid when Ready.
	Buffer buffers.Buffer
	// Ready, Reason and Message are the ReadyForProvisioning condition
	// the controller writes.
	Ready           bool
	Reason, Message string
}

// Resolve resolves cb as Reconcile does: reader serves its PodTemplate or
// scalable object (the controller's cache and API reader). An error is
// the reader's, not the buffer's fault.
func Resolve(ctx context.Context, reader client.Reader, cb *autoscalingv1beta1.CapacityBuffer) (Resolution, error) {
	if !active(cb) {
		return Resolution{}, nil
	}
	res, err := resolve(ctx, reader, reader, cb)
	if nr, ok := notReady(err); ok {
		return Resolution{Active: true, Reason: nr.reason, Message: nr.message}, nil
	}
	if err != nil {
		return Resolution{}, err
	}
	msg := capReplicas(res)
	return Resolution{Active: true, Ready: true, Reason: autoscalingv1beta1.ReasonResolved, Message: msg,
		Buffer: buffers.Buffer{Key: client.ObjectKeyFromObject(cb), UID: cb.UID, Template: res.template, Replicas: res.replicas}}, nil
}
