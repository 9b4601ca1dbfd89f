package interruption

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Handler takes the action of a message on the NodeClaims of its
// instances: the events, the offering and reservation marks, the
// replacement or deletion. The queue's Controller and the instance status
// poll (package instancestatus) share it, so a message acts the same
// whichever way it arrived.
type Handler struct {
	kubeClient   client.Client
	offerings    OfferingMarker
	reservations ReservationMarker
	clock        clock.Clock
	recorder     events.EventRecorder
	// replaceFirst: a spot warning that leaves time for a launch marks the
	// NodeClaim to be replaced first (ReplaceFirst).
	replaceFirst bool
}

// NewHandler builds a handler; offerings and reservations may be nil
// (nothing to mark: no spot kinds, capacity reservations disabled).
func NewHandler(kubeClient client.Client, offerings OfferingMarker, reservations ReservationMarker, clk clock.Clock,
	recorder events.EventRecorder) *Handler {
	return &Handler{kubeClient: kubeClient, offerings: offerings, reservations: reservations, clock: clk, recorder: recorder}
}

// Act handles msgs, messages that did not come from the queue, against the
// cluster as it is now, concurrently. found[i] reports whether an instance
// of msgs[i] has a NodeClaim (instances of other clusters, or not launched
// by karp, are skipped).
func (c *Handler) Act(ctx context.Context, msgs []Message) (found []bool, err error) {
	found = make([]bool, len(msgs))
	if len(msgs) == 0 {
		return found, nil
	}
	owned, err := c.gather(ctx)
	if err != nil {
		return found, err
	}
	errs := make([]error, len(msgs))
	workqueue.ParallelizeUntil(ctx, workers, len(msgs), func(i int) {
		for _, id := range msgs[i].InstanceIDs {
			if _, ok := owned.nodeClaims[id]; ok {
				found[i] = true
			}
		}
		if e := c.handle(ctx, msgs[i], owned); e != nil {
			errs[i] = fmt.Errorf("handling %s of %v: %w", msgs[i].Kind, msgs[i].InstanceIDs, e)
		}
	})
	return found, errors.Join(errs...)
}
