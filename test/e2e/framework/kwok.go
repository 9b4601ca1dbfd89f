package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
)

// MakeKWOKNode returns a Node kwok will manage: it carries kwok's
// annotation, the usual hostname/os/arch labels and a fixed capacity.
func MakeKWOKNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{localcluster.KWOKNodeAnnotationKey: localcluster.KWOKNodeAnnotationValue},
			Labels: map[string]string{
				corev1.LabelHostname:   name,
				corev1.LabelOSStable:   "linux",
				corev1.LabelArchStable: "amd64",
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// MakePodOn returns a small pod whose node selector pins it to nodeName,
// so the kube-scheduler (not the test) places it.
func MakePodOn(namespace, name, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: nodeName},
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("64Mi"),
				}},
			}},
		},
	}
}

// NodeReady reports whether the node's Ready condition is True and the
// node lifecycle controller has lifted the not-ready taint.
func NodeReady(node *corev1.Node) bool {
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == corev1.TaintNodeNotReady || taint.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	return ready
}

// PodRunning reports whether the pod is bound, Running and Ready.
func PodRunning(pod *corev1.Pod) bool {
	if pod.Spec.NodeName == "" || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// PodCondition is the status of the pod's condition of that type ("" when
// it has none).
func PodCondition(pod *corev1.Pod, kind corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == kind {
			return c.Status
		}
	}
	return ""
}

// Eventually's pace: it checks every pollInterval at first and, as the
// wait goes on, waits a quarter of the time already waited before the
// next check, up to maxPollInterval. A short wait is seen within 250 ms;
// a long one (a drain, a TTL, a budget's window) is checked every second
// instead of four times a second. The tests' own lists were 40% of what
// the API server served in an e2e package (docs/performance.md).
const (
	pollInterval    = 250 * time.Millisecond
	maxPollInterval = time.Second
)

// backoff is Eventually's pace: the wait before the next check after
// waiting elapsed.
func backoff(elapsed time.Duration) time.Duration {
	return min(max(elapsed/4, pollInterval), maxPollInterval)
}

// Eventually checks cond until it returns true or timeout passes, then
// fails the test with the last description cond gave. It checks every
// 250 ms at first and backs off to once a second on long waits (backoff).
func Eventually(t testing.TB, timeout time.Duration, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	poll(t, timeout, backoff, cond)
}

// Poll checks cond every interval until it returns true or timeout
// passes, then fails the test with the last description cond gave. A
// wait longer than a minute logs that description once a minute.
func Poll(t testing.TB, timeout, interval time.Duration, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	poll(t, timeout, func(time.Duration) time.Duration { return interval }, cond)
}

// poll is Poll with the wait before each next check given by next, from
// the time waited so far.
func poll(t testing.TB, timeout time.Duration, next func(elapsed time.Duration) time.Duration, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	lastLog := start
	for {
		// cond gets the test's context, not one bounded by timeout, so
		// its last description is about the condition, not an expired
		// deadline.
		ok, desc := cond(t.Context())
		if ok {
			return
		}
		if time.Since(lastLog) >= time.Minute {
			t.Logf("waiting: %s", desc)
			lastLog = time.Now()
		}
		select {
		case <-deadline.C:
			msg := fmt.Sprintf("condition not met within %s: %s", timeout, desc)
			recordFailure(t, msg)
			t.Fatal(msg)
		case <-time.After(next(time.Since(start))):
		}
	}
}

// ExpectNodeReadyAndPodRuns creates a kwok Node, waits until it is Ready
// with no not-ready taint, then creates a pod pinned to it and waits until
// the kube-scheduler has bound it and kwok reports it Running. It returns
// the node and pod.
func ExpectNodeReadyAndPodRuns(t testing.TB, cl client.Client, nodeName string) (*corev1.Node, *corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	node := MakeKWOKNode(nodeName)
	if err := cl.Create(ctx, node); err != nil {
		t.Fatalf("creating node %s: %v", nodeName, err)
	}
	Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, err.Error()
		}
		return NodeReady(node), fmt.Sprintf("node %s conditions %v taints %v", nodeName, node.Status.Conditions, node.Spec.Taints)
	})
	pod := MakePodOn("default", nodeName+"-pod", nodeName)
	if err := cl.Create(ctx, pod); err != nil {
		t.Fatalf("creating pod: %v", err)
	}
	Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		return PodRunning(pod), fmt.Sprintf("pod node %q phase %q conditions %v", pod.Spec.NodeName, pod.Status.Phase, pod.Status.Conditions)
	})
	if pod.Spec.NodeName != nodeName {
		t.Fatalf("pod bound to %q, want %q", pod.Spec.NodeName, nodeName)
	}
	return node, pod
}

// SetKWOKNodeReady makes kwok report the node not Ready and keep it so
// (ready false: the karp.sh/kwok-ready=false annotation), or lets kwok make
// it Ready again (ready true: the annotation removed). It does not wait.
func SetKWOKNodeReady(t testing.TB, cl client.Client, nodeName string, ready bool) {
	t.Helper()
	value := `"` + localcluster.KWOKNotReadyValue + `"`
	if ready {
		value = "null"
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%s}}}`, localcluster.KWOKReadyAnnotationKey, value)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
	if err := cl.Patch(t.Context(), node, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("annotating node %s %s: %v", nodeName, patch, err)
	}
}

// ReadyStatus is the status of the node's Ready condition ("" when it has
// none).
func ReadyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
