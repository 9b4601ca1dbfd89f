package provisioningrequest

import (
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// Condition reasons. Accepted, CapacityIsFound, CapacityIsNotFound,
// CapacityIsProvisioned, FailedToCreatePods, Expired and BookingExpired
// are Cluster Autoscaler's; CapacityIsBeingProvisioned is karp's (CA sets
// Provisioned=True as soon as it asks for the nodes, karp once they
// launched).
const (
	ReasonAccepted                   = "Accepted"
	ReasonCapacityIsFound            = "CapacityIsFound"
	ReasonCapacityIsNotFound         = "CapacityIsNotFound"
	ReasonCapacityIsProvisioned      = "CapacityIsProvisioned"
	ReasonCapacityIsBeingProvisioned = "CapacityIsBeingProvisioned"
	ReasonFailedToCreatePods         = "FailedToCreatePods"
	ReasonExpired                    = "Expired"
	ReasonBookingExpired             = "BookingExpired"
)

// DefaultBookingPeriod is how long provisioned capacity is held for the
// request's pods (Cluster Autoscaler's default).
const DefaultBookingPeriod = 10 * time.Minute

// step is what a request needs next.
type step int

const (
	// stepIgnore: karp does not serve the class; the request is not touched.
	stepIgnore step = iota
	// stepRelease: Failed or BookingExpired; the booking (if any) is let go.
	stepRelease
	// stepExpireBooking: the booking period passed; set BookingExpired.
	stepExpireBooking
	// stepHold: Provisioned and booked; wait for the booking's end.
	stepHold
	// stepCheck: check-capacity; solve against the existing nodes.
	stepCheck
	// stepFail: the atomic request's ValidUntilSeconds passed; set Failed.
	stepFail
	// stepScaleUp: atomic, nothing launched; solve and launch all or none.
	stepScaleUp
	// stepRollback: some NodeClaims of the atomic launch are gone; delete
	// the others and retry later.
	stepRollback
	// stepWait: NodeClaims are launching or being deleted; wait.
	stepWait
	// stepProvisioned: every NodeClaim of the atomic launch launched.
	stepProvisioned
)

// claims is what exists of an atomic request's NodeClaims.
type claims struct {
	// expected is how many were created together (0: none were).
	expected int
	// present are not being deleted; launched of them have an instance.
	present, launched int
	// deleting are being deleted.
	deleting int
}

// observation is what decide reads about one request.
type observation struct {
	class      string
	conditions []metav1.Condition
	created    time.Time
	// validUntil is the atomic class's retry bound (ValidUntilSeconds), 0
	// when unset.
	validUntil time.Duration
	claims     claims
}

// decide returns the request's next step, and for stepHold how long until
// the booking expires.
func decide(o observation, now time.Time, bookingPeriod time.Duration) (step, time.Duration) {
	if o.class != autoscalingv1.ProvisioningClassCheckCapacity && o.class != autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp {
		return stepIgnore, 0
	}
	if isTrue(o.conditions, autoscalingv1.Failed) || isTrue(o.conditions, autoscalingv1.BookingExpired) {
		return stepRelease, 0
	}
	if p := metaFind(o.conditions, autoscalingv1.Provisioned); p != nil && p.Status == metav1.ConditionTrue {
		left := p.LastTransitionTime.Add(bookingPeriod).Sub(now)
		if left <= 0 {
			return stepExpireBooking, 0
		}
		return stepHold, left
	}
	if o.class == autoscalingv1.ProvisioningClassCheckCapacity {
		return stepCheck, 0
	}
	return decideAtomic(o, now), 0
}

// decideAtomic is decide for an atomic request not provisioned yet: its
// NodeClaims first (a launch under way or to roll back), then its retry
// bound.
func decideAtomic(o observation, now time.Time) step {
	c := o.claims
	switch {
	case c.expected > 0 && c.present < c.expected && c.present > 0:
		return stepRollback
	case c.deleting > 0 || c.present > 0 && c.launched < c.present:
		return stepWait
	case c.present > 0:
		return stepProvisioned
	}
	if o.validUntil > 0 && !now.Before(o.created.Add(o.validUntil)) {
		return stepFail
	}
	return stepScaleUp
}

// verdict is the outcome of one solve of a request's pods.
type verdict struct {
	// fits is true when every pod was placed and every new NodeClaim is
	// within the NodePools' and the cluster's limits.
	fits bool
	// message says why not, or what was found.
	message string
	// launch are the NodeClaims to create (atomic class), as admitted.
	launch []*simulation.NodeClaim
}

// judge turns a solve of total pods into a verdict; limits (nil for
// check-capacity, which launches nothing) admits the new NodeClaims with
// the NodePools as they are now (pools by name).
func judge(res *simulation.Result, total int, limits *simulation.Limits, pools map[string]*karpv1.NodePool) verdict {
	if len(res.PodErrors) > 0 {
		pe := res.PodErrors[0]
		return verdict{message: fmt.Sprintf("%d of %d pods do not fit: %s/%s: %s", len(res.PodErrors), total,
			pe.Pod.Namespace, pe.Pod.Name, pe.Status.Message())}
	}
	if limits == nil {
		if len(res.NodeClaims) > 0 {
			return verdict{message: fmt.Sprintf("the pods fit only on %d new node(s); check-capacity launches none", len(res.NodeClaims))}
		}
		return verdict{fits: true, message: fmt.Sprintf("all %d pods fit on the existing nodes", total)}
	}
	var launch []*simulation.NodeClaim
	for _, nc := range res.NodeClaims {
		np := nc.NodePool
		if cur, ok := pools[np.Name]; ok {
			np = cur
		}
		admitted, reason := limits.Admit(np, nc)
		if reason.Code != "" {
			return verdict{message: fmt.Sprintf("the pods need %d new node(s) and %s", len(res.NodeClaims), reason.String())}
		}
		admitted.NodePool = np
		launch = append(launch, admitted)
	}
	return verdict{fits: true, launch: launch,
		message: fmt.Sprintf("all %d pods fit: %d new node(s)", total, len(launch))}
}

// validUntil parses ValidUntilSeconds; a missing or malformed value means
// no bound (as Cluster Autoscaler).
func validUntil(params map[string]autoscalingv1.Parameter) time.Duration {
	raw, ok := params[autoscalingv1.ValidUntilSecondsParameter]
	if !ok {
		return 0
	}
	secs, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || secs <= 0 {
		return 0
	}
	return time.Duration(secs) * time.Second
}

func metaFind(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func isTrue(conds []metav1.Condition, t string) bool {
	c := metaFind(conds, t)
	return c != nil && c.Status == metav1.ConditionTrue
}
