package podevents_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/podevents"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestEventTime(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	created := now.Add(-time.Hour)
	base := func() *corev1.Pod {
		p := test.MakePod("p").NodeName("n").Created(created).Obj()
		p.Status.Conditions = nil
		return p
	}
	tests := map[string]struct {
		pod  func() *corev1.Pod
		want time.Time
	}{
		"bound: PodScheduled transition": {
			pod: func() *corev1.Pod {
				p := base()
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}}
				return p
			},
			want: now.Add(-time.Minute),
		},
		"bound without a condition: creation": {pod: base, want: created},
		"terminating: deletion request": {
			pod: func() *corev1.Pod {
				p := base()
				p.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(20 * time.Second)))
				p.DeletionGracePeriodSeconds = ptr.To[int64](30)
				return p
			},
			want: now.Add(-10 * time.Second),
		},
		"finished: last condition change": {
			pod: func() *corev1.Pod {
				p := base()
				p.Status.Phase = corev1.PodSucceeded
				p.Status.Conditions = []corev1.PodCondition{
					{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))},
					{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-5 * time.Second))},
				}
				return p
			},
			want: now.Add(-5 * time.Second),
		},
		"never in the future": {
			pod: func() *corev1.Pod {
				p := base()
				p.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(time.Hour)))
				return p
			},
			want: now,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := podevents.EventTime(tc.pod(), now); !got.Equal(tc.want) {
				t.Errorf("EventTime = %s, want %s", got, tc.want)
			}
		})
	}
}

// schedule records the pod's PodScheduled transition at the given time
// and waits until the cache has it.
func schedule(t *testing.T, pod *corev1.Pod, at time.Time) {
	t.Helper()
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
	h.UpdateStatus(t, pod)
	rv := pod.ResourceVersion
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		cached := &corev1.Pod{}
		if err := h.Client.Get(ctx, client.ObjectKeyFromObject(pod), cached); err != nil {
			return false, nil
		}
		return cached.ResourceVersion == rv, nil
	})
	if err != nil {
		t.Fatalf("cache did not see the pod: %v", err)
	}
}

func reconcilePod(t *testing.T, c *podevents.Controller, pod *corev1.Pod) time.Time {
	t.Helper()
	h.Synced(t)
	_, err := reconcile.AsReconciler[*corev1.Pod](h.Client, c).Reconcile(t.Context(),
		reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}})
	if err != nil {
		t.Fatal(err)
	}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	h.Get(t, nc)
	return nc.Status.LastPodEventTime.Time
}

func TestLastPodEventTimeFollowsBindingsAtMostOncePerDedupe(t *testing.T) {
	h.Reset(t)
	c := podevents.NewController(h.Client, h.Clock)
	h.Create(t, test.MakeNodeClaim("c").NodePool("p").Obj())
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	h.Get(t, nc)
	nc.Status.ProviderID = "fake:///n"
	h.UpdateStatus(t, nc)
	h.Create(t, test.MakeNode("n").ProviderID("fake:///n").Obj())

	t0 := h.Clock.Now()
	var pods []*corev1.Pod
	for _, name := range []string{"a", "b", "c"} {
		pod := test.MakePod("podevents-" + name).NodeName("n").Obj()
		h.Create(t, pod)
		t.Cleanup(func() { _ = h.Env.Client.Delete(context.WithoutCancel(t.Context()), pod, client.GracePeriodSeconds(0)) })
		pods = append(pods, pod)
	}

	schedule(t, pods[0], t0)
	if got := reconcilePod(t, c, pods[0]); !got.Equal(t0) {
		t.Fatalf("lastPodEventTime = %s, want the binding time %s", got, t0)
	}
	// A second binding 5s later is within the dedupe interval: no write.
	h.Clock.Step(5 * time.Second)
	schedule(t, pods[1], h.Clock.Now())
	if got := reconcilePod(t, c, pods[1]); !got.Equal(t0) {
		t.Errorf("lastPodEventTime = %s, want unchanged %s within %s", got, t0, podevents.Dedupe)
	}
	// Replaying the first pod (a controller restart) does not move it back or forward.
	if got := reconcilePod(t, c, pods[0]); !got.Equal(t0) {
		t.Errorf("replay moved lastPodEventTime to %s", got)
	}
	// A binding past the dedupe interval is recorded.
	h.Clock.Step(20 * time.Second)
	schedule(t, pods[2], h.Clock.Now())
	if got := reconcilePod(t, c, pods[2]); !got.Equal(h.Clock.Now()) {
		t.Errorf("lastPodEventTime = %s, want %s", got, h.Clock.Now())
	}
}
