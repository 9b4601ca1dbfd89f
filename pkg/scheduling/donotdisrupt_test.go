package scheduling

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDoNotDisruptActive is upstream's rule for a pod's
// karpenter.sh/do-not-disrupt annotation: "true" protects; a positive
// duration protects until the pod's status.startTime plus the duration, and
// always while the pod has no start time; any other value is ignored.
func TestDoNotDisruptActive(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	created := now.Add(-2 * time.Hour)
	tests := map[string]struct {
		value     *string
		startedAt *time.Time
		want      bool
	}{
		"no annotation":             {},
		"true":                      {value: ptrTo("true"), want: true},
		"true without a start time": {value: ptrTo("true"), want: true},
		"false":                     {value: ptrTo("false"), startedAt: ptrTo(now.Add(-time.Minute))},
		"not a duration":            {value: ptrTo("soon"), startedAt: ptrTo(now.Add(-time.Minute))},
		"zero duration":             {value: ptrTo("0s"), startedAt: ptrTo(now)},
		"negative duration":         {value: ptrTo("-5m"), startedAt: ptrTo(now.Add(time.Minute))},
		"duration not over":         {value: ptrTo("30m"), startedAt: ptrTo(now.Add(-29 * time.Minute)), want: true},
		"duration over":             {value: ptrTo("30m"), startedAt: ptrTo(now.Add(-31 * time.Minute))},
		"duration ends exactly now": {value: ptrTo("30m"), startedAt: ptrTo(now.Add(-30 * time.Minute))},
		"duration counted from start, not creation": {value: ptrTo("1h"), startedAt: ptrTo(now.Add(-10 * time.Minute)), want: true},
		"duration without a start time protects":    {value: ptrTo("30m"), want: true},
		"invalid value without a start time":        {value: ptrTo("forever")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: metav1.NewTime(created)}}
			if tc.value != nil {
				pod.Annotations = map[string]string{"karpenter.sh/do-not-disrupt": *tc.value}
			}
			if tc.startedAt != nil {
				pod.Status.StartTime = &metav1.Time{Time: *tc.startedAt}
			}
			if got := DoNotDisruptActive(pod, now); got != tc.want {
				t.Errorf("DoNotDisruptActive = %v, want %v", got, tc.want)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestDoNotDisruptInvalid names why an annotation is ignored, and only
// for the values DoNotDisruptActive ignores: "false" is valid (it opts a
// running Job's pod out of protection) though it protects nothing.
func TestDoNotDisruptInvalid(t *testing.T) {
	for value, want := range map[string]string{
		"":      `"" is not a duration`,
		"true":  "",
		"false": "",
		"30m":   "",
		"maybe": `"maybe" is not a duration`,
		"0s":    `duration "0s" must be positive`,
		"-1h":   `duration "-1h" must be positive`,
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"karpenter.sh/do-not-disrupt": value}}}
		if got := DoNotDisruptInvalid(pod); got != want {
			t.Errorf("DoNotDisruptInvalid(%q) = %q, want %q", value, got, want)
		}
	}
	if got := DoNotDisruptInvalid(&corev1.Pod{}); got != "" {
		t.Errorf("DoNotDisruptInvalid without the annotation = %q, want \"\"", got)
	}
	if got, want := DoNotDisruptIgnoredMessage(`"maybe" is not a duration`),
		`Invalid karpenter.sh/do-not-disrupt annotation: "maybe" is not a duration, ignoring annotation`; got != want {
		t.Errorf("DoNotDisruptIgnoredMessage = %q, want upstream's %q", got, want)
	}
}
