package scheduling

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// doNotDisruptAnnotationKey is karpenter.sh/do-not-disrupt (pkg/apis/v1's
// DoNotDisruptAnnotationKey; this package imports no karp API types).
const doNotDisruptAnnotationKey = "karpenter.sh/do-not-disrupt"

// DoNotDisruptActive reports whether the pod's karpenter.sh/do-not-disrupt
// annotation protects it from voluntary disruption at now. It is the one
// rule for candidate filtering and for draining, upstream's: "true"
// protects; a positive Go duration protects until the pod's
// status.startTime plus the duration, and always while the pod has no start
// time (its age is not known yet, so the rule fails safe); any other value,
// zero and negative durations included, is ignored.
func DoNotDisruptActive(pod *corev1.Pod, now time.Time) bool {
	v, ok := pod.Annotations[doNotDisruptAnnotationKey]
	if !ok {
		return false
	}
	if v == "true" {
		return true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return false
	}
	if pod.Status.StartTime == nil {
		return true
	}
	return now.Sub(pod.Status.StartTime.Time) < d
}

// DoNotDisruptInvalid says why the pod's karpenter.sh/do-not-disrupt
// annotation is ignored, or returns "" when it is absent or valid: "true",
// "false" (which protects nothing but is valid: it opts a running Job's pod
// out of karp's protection) and positive durations are valid.
func DoNotDisruptInvalid(pod *corev1.Pod) string {
	v, ok := pod.Annotations[doNotDisruptAnnotationKey]
	if !ok || v == "true" || v == "false" {
		return ""
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return fmt.Sprintf("%q is not a duration", v)
	case d <= 0:
		return fmt.Sprintf("duration %q must be positive", v)
	}
	return ""
}

// DoNotDisruptIgnoredMessage is the note of the InvalidDoNotDisruptAnnotation
// event for a pod whose annotation is ignored because of why
// (DoNotDisruptInvalid).
func DoNotDisruptIgnoredMessage(why string) string {
	return fmt.Sprintf("Invalid %s annotation: %s, ignoring annotation", doNotDisruptAnnotationKey, why)
}
