package disruption

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// Helpers of the disruption-signal tests (drift, expiration, interruption,
// DaemonSet replacement, do-not-disrupt). Each test owns a namespace, a
// KWOKNodeClass and a NodePool of the same name; the controller process
// and the clean-up come from termination_test.go's helpers.

// sigSetup creates the test's namespace, KWOKNodeClass and NodePool (pool
// is built by the caller on a pool named name), starts karp with
// extraArgs, and cleans everything up at the end.
func sigSetup(t *testing.T, name string, pool *karpv1.NodePool, extraArgs ...string) *framework.Framework {
	t.Helper()
	f := framework.Current(t)
	termCreate(t, f.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	termCreate(t, f.Client, test.MakeKWOKNodeClass(name).Obj())
	pool.Spec.Template.Spec.NodeClassRef = kwokv1alpha1.NodeClassReference(name)
	termCreate(t, f.Client, pool)
	termStartKarp(t, f, extraArgs...)
	// Registered after the controller, so it runs while karp still runs.
	t.Cleanup(func() { termCleanUp(f.Client, name) })
	return f
}

// sigDeployment is a Deployment of pause pods requesting cpu, restricted
// to the test's NodePool.
func sigDeployment(name string, replicas int32, cpu string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: name},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: test.ResourceList("cpu", cpu, "memory", "256Mi")}}},
				},
			},
		},
	}
}

// sigRunningPods lists the namespace's running, ready, non-terminating pods.
func sigRunningPods(ctx context.Context, cl client.Client, namespace string) []corev1.Pod {
	var list corev1.PodList
	if err := cl.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if termCountAvailable([]corev1.Pod{p}) == 1 {
			out = append(out, p)
		}
	}
	return out
}

// sigPending counts the namespace's pods that are not bound.
func sigPending(ctx context.Context, cl client.Client, namespace string) int {
	var list corev1.PodList
	if err := cl.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return -1
	}
	n := 0
	for _, p := range list.Items {
		if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// sigNodeClaims lists the pool's NodeClaims by name.
func sigNodeClaims(ctx context.Context, cl client.Client, pool string) map[string]karpv1.NodeClaim {
	var list karpv1.NodeClaimList
	out := map[string]karpv1.NodeClaim{}
	if err := cl.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return out
	}
	for _, nc := range list.Items {
		out[nc.Name] = nc
	}
	return out
}

// sigWaitRunning waits until replicas pods of the namespace run and
// returns the names of the NodeClaims under them.
func sigWaitRunning(t *testing.T, cl client.Client, namespace string, replicas int) map[string]bool {
	t.Helper()
	framework.Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		n := len(sigRunningPods(ctx, cl, namespace))
		return n == replicas, fmt.Sprintf("%d of %d pods running", n, replicas)
	})
	nodes := map[string]bool{}
	for _, p := range sigRunningPods(t.Context(), cl, namespace) {
		nodes[p.Spec.NodeName] = true
	}
	claims := map[string]bool{}
	for name, nc := range sigNodeClaims(t.Context(), cl, namespace) {
		if nodes[nc.Status.NodeName] {
			claims[name] = true
		}
	}
	return claims
}

// sigRunningWatcher samples, every 200 ms, how many pods of an app run.
type sigRunningWatcher struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples int
	min     int
}

func sigWatchRunning(t *testing.T, cl client.Client, namespace, app string) *sigRunningWatcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &sigRunningWatcher{cancel: cancel, done: make(chan struct{}), min: 1 << 30}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			var list corev1.PodList
			if err := cl.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{"app": app}); err == nil {
				n := termCountAvailable(list.Items)
				w.mu.Lock()
				w.samples++
				w.min = min(w.min, n)
				w.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

// stop ends sampling and returns the number of samples and the fewest
// running pods seen.
func (w *sigRunningWatcher) stop() (samples, fewest int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples, w.min
}

// sigFastDisruption are controller flags that make the disruption loop
// react in seconds instead of upstream's 10s poll and 15s validation.
var sigFastDisruption = []string{"--disruption-poll-period=1s", "--disruption-validation-delay=2s"}
