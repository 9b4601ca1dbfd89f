package termination

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

var now = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func mkPod(name string, opts ...podOpt) corev1.Pod {
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	pod.Status.Phase = corev1.PodRunning
	for _, o := range opts {
		o(&pod)
	}
	return pod
}

func daemon(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds", Controller: ptr.To(true)}}
}
func critical(p *corev1.Pod) { p.Spec.PriorityClassName = "system-node-critical" }
func terminating(at time.Time) podOpt {
	return func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: at} }
}
func annotated(k, v string) podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{k: v} }
}
func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func grace(s int64) podOpt {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(s) }
}
func started(at time.Time) podOpt {
	return func(p *corev1.Pod) { p.Status.StartTime = &metav1.Time{Time: at} }
}
func tolerates(t corev1.Toleration) podOpt {
	return func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, t) }
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestPlanDrain(t *testing.T) {
	type want struct {
		Waiting, Evict, Force, Blocked []string
		NextForce                      time.Time
	}
	tests := map[string]struct {
		pods     []corev1.Pod
		deadline time.Time
		want     want
	}{
		"workload pods go before DaemonSet and critical pods": {
			pods: []corev1.Pod{mkPod("ds", daemon), mkPod("crit", critical), mkPod("critds", critical, daemon), mkPod("w1"), mkPod("w2")},
			want: want{Waiting: []string{"ds", "crit", "critds", "w1", "w2"}, Evict: []string{"w1", "w2"}},
		},
		"DaemonSet pods go once workload pods are gone": {
			pods: []corev1.Pod{mkPod("ds", daemon), mkPod("crit", critical), mkPod("critds", critical, daemon)},
			want: want{Waiting: []string{"ds", "crit", "critds"}, Evict: []string{"ds"}},
		},
		"critical pods go after non-critical DaemonSet pods": {
			pods: []corev1.Pod{mkPod("crit", critical), mkPod("critds", critical, daemon)},
			want: want{Waiting: []string{"crit", "critds"}, Evict: []string{"crit"}},
		},
		"critical DaemonSet pods go last": {
			pods: []corev1.Pod{mkPod("critds", critical, daemon)},
			want: want{Waiting: []string{"critds"}, Evict: []string{"critds"}},
		},
		"a terminating workload pod holds the DaemonSet group back and is not evicted again": {
			pods: []corev1.Pod{mkPod("w", terminating(now.Add(-10*time.Second))), mkPod("ds", daemon)},
			want: want{Waiting: []string{"w", "ds"}},
		},
		"a pod deleted long ago but still within its grace period is waited for": {
			// The API server sets the deletion timestamp to the end of the
			// grace period: deleted 5 minutes ago with 10 minutes of grace.
			pods: []corev1.Pod{mkPod("w", grace(600), terminating(now.Add(5*time.Minute))), mkPod("ds", daemon)},
			want: want{Waiting: []string{"w", "ds"}},
		},
		"a pod stuck terminating for over a minute is not waited for": {
			pods: []corev1.Pod{mkPod("w", terminating(now.Add(-2*time.Minute))), mkPod("ds", daemon)},
			want: want{Waiting: []string{"ds"}, Evict: []string{"ds"}},
		},
		"pods tolerating the disrupted taint, mirror pods and finished pods are left alone": {
			pods: []corev1.Pod{
				mkPod("tolerates-key", tolerates(corev1.Toleration{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists})),
				mkPod("tolerates-all", tolerates(corev1.Toleration{Operator: corev1.TolerationOpExists})),
				mkPod("mirror", annotated(corev1.MirrorPodAnnotationKey, "x")),
				mkPod("done", phase(corev1.PodSucceeded)),
				mkPod("failed", phase(corev1.PodFailed)),
			},
		},
		"a toleration for another effect does not count": {
			pods: []corev1.Pod{mkPod("w", tolerates(corev1.Toleration{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}))},
			want: want{Waiting: []string{"w"}, Evict: []string{"w"}},
		},
		"do-not-disrupt pods are not evicted and hold later groups back": {
			pods: []corev1.Pod{mkPod("dnd", annotated(karpv1.DoNotDisruptAnnotationKey, "true")), mkPod("w"), mkPod("ds", daemon)},
			want: want{Waiting: []string{"dnd", "w", "ds"}, Evict: []string{"w"}, Blocked: []string{"dnd"}},
		},
		"a do-not-disrupt duration protects until start plus the duration": {
			pods: []corev1.Pod{
				mkPod("young", annotated(karpv1.DoNotDisruptAnnotationKey, "1h"), started(now.Add(-time.Minute))),
				mkPod("old", annotated(karpv1.DoNotDisruptAnnotationKey, "1h"), started(now.Add(-2*time.Hour))),
				mkPod("unstarted", annotated(karpv1.DoNotDisruptAnnotationKey, "1h")),
				mkPod("invalid", annotated(karpv1.DoNotDisruptAnnotationKey, "soon")),
			},
			want: want{Waiting: []string{"young", "old", "unstarted", "invalid"}, Evict: []string{"old", "invalid"}, Blocked: []string{"young", "unstarted"}},
		},
		"before the deadline minus a pod's grace period it is not forced": {
			pods:     []corev1.Pod{mkPod("dnd", annotated(karpv1.DoNotDisruptAnnotationKey, "true"), grace(30))},
			deadline: now.Add(time.Minute),
			want:     want{Waiting: []string{"dnd"}, Blocked: []string{"dnd"}, NextForce: now.Add(30 * time.Second)},
		},
		"at the deadline minus its grace period a pod is forced, whatever its group": {
			pods: []corev1.Pod{
				mkPod("dnd", annotated(karpv1.DoNotDisruptAnnotationKey, "true"), grace(60)),
				mkPod("critds", critical, daemon, grace(90)),
				mkPod("w", grace(10)),
			},
			deadline: now.Add(time.Minute),
			want:     want{Waiting: []string{"dnd", "critds", "w"}, Force: []string{"dnd", "critds"}, Evict: []string{"w"}, NextForce: now.Add(50 * time.Second)},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			plan := planDrain(tc.pods, tc.deadline, now)
			got := want{Waiting: names(plan.waiting), Evict: names(plan.evict), Force: names(plan.forceDelete),
				Blocked: names(plan.blocked), NextForce: plan.nextForce}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want,+got):\n%s", diff)
			}
		})
	}
}
