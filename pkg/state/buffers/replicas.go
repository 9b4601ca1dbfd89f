package buffers

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
)

// DesiredReplicas is Cluster Autoscaler's rule: the larger of replicas and
// percentage (of the scalable object's replicas, rounded up, at least 1
// when both are positive), capped by how many pods fit in limits; with
// neither replicas nor percentage, as many as fit in limits; with none of
// them, 0. Limits on resources the pod does not request constrain nothing
// (the pod's requests include pods: 1, so a pods limit caps the count).
func DesiredReplicas(spec autoscalingv1beta1.CapacityBufferSpec, requests corev1.ResourceList, scalableReplicas *int32) int32 {
	sized := false
	desired := int32(0)
	if spec.Replicas != nil {
		sized, desired = true, *spec.Replicas
	}
	if spec.Percentage != nil && scalableReplicas != nil {
		sized, desired = true, max(desired, percentageReplicas(*scalableReplicas, *spec.Percentage))
	}
	capped, ok := limitReplicas(spec.Limits, requests)
	switch {
	case !ok:
		return desired
	case !sized:
		return capped
	default:
		return min(desired, capped)
	}
}

// percentageReplicas is ceil(replicas × percentage / 100), at least 1 when
// both are positive.
func percentageReplicas(replicas, percentage int32) int32 {
	if replicas <= 0 || percentage <= 0 {
		return 0
	}
	n := (int64(replicas)*int64(percentage) + 99) / 100
	return int32(min(max(n, 1), math.MaxInt32))
}

// limitReplicas is how many pods of the given requests fit in limits: the
// smallest floor(limit / request) over the resources both name. false
// when they name none in common (limits do not constrain).
func limitReplicas(limits, requests corev1.ResourceList) (int32, bool) {
	out, ok := int64(math.MaxInt32), false
	for name, limit := range limits {
		request, has := requests[name]
		if !has || request.Sign() <= 0 {
			continue
		}
		ok = true
		out = min(out, quotient(limit, request))
	}
	return int32(out), ok
}

// quotient is floor(limit / request), at most MaxInt32, for a positive
// request: estimated in floating point, then corrected with exact
// quantity arithmetic (floats miss exact multiples such as 300m / 100m).
func quotient(limit, request resource.Quantity) int64 {
	if limit.Sign() <= 0 {
		return 0
	}
	fits := func(n int64) bool {
		p := request.DeepCopy()
		return p.Mul(n) && p.Cmp(limit) <= 0
	}
	// The estimate is off by rounding only: a few steps correct it (and
	// bound the work when a product overflows int64).
	n := int64(min(limit.AsApproximateFloat64()/request.AsApproximateFloat64(), math.MaxInt32))
	for i := 0; i < 3 && n > 0 && !fits(n); i++ {
		n--
	}
	for i := 0; i < 3 && n < math.MaxInt32 && fits(n+1); i++ {
		n++
	}
	return n
}

// MaxReplicas bounds the virtual pods of one buffer (karp's own bound):
// each is solved like a pending pod, so a buffer asking for millions must
// not stall provisioning or exhaust memory.
const MaxReplicas = 1000
