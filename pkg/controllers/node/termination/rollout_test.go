package termination

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// workload is a Deployment (or StatefulSet) with its pods, as its
// controllers would have made them (no controller manager runs here).
type workload struct {
	// owner is what the pods' controller reference names (the
	// Deployment's ReplicaSet, or the StatefulSet), kind its kind.
	owner  client.Object
	kind   string
	labels map[string]string
	n      int
}

// deploymentWorkload creates a Deployment of replicas (maxUnavailable
// 25%: 1 of 4) and its ReplicaSet; they are deleted when the test ends.
func deploymentWorkload(t *testing.T, name string, replicas int32) *workload {
	t.Helper()
	d := test.MakeDeployment(name).Replicas(replicas).Obj()
	h.Create(t, d)
	rs := test.ReplicaSetOf(d, "h1")
	h.Create(t, rs)
	cleanupWorkload(t, d, rs)
	return &workload{owner: rs, kind: "ReplicaSet", labels: rs.Spec.Template.Labels}
}

// statefulSetWorkload creates a StatefulSet of replicas (maxUnavailable 1).
func statefulSetWorkload(t *testing.T, name string, replicas int32) *workload {
	t.Helper()
	s := test.MakeStatefulSet(name).Replicas(replicas).Obj()
	h.Create(t, s)
	cleanupWorkload(t, s)
	return &workload{owner: s, kind: "StatefulSet", labels: s.Spec.Template.Labels}
}

func cleanupWorkload(t *testing.T, objs ...client.Object) {
	t.Cleanup(func() {
		for _, o := range objs {
			_ = h.Env.Client.Delete(context.WithoutCancel(t.Context()), o)
		}
	})
}

// pod creates the workload's next pod on node, running and Ready unless
// notReady (then it is never seen Ready).
func (w *workload) pod(t *testing.T, node string, notReady bool) *corev1.Pod {
	t.Helper()
	w.n++
	pod := test.MakePod(fmt.Sprintf("%s-%d", w.owner.GetName(), w.n)).NodeName(node).Obj()
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	test.ControlledBy(pod, w.owner, w.kind, w.labels)
	h.Create(t, pod)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &metav1.Time{Time: h.Clock.Now()}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if notReady {
		pod.Status.Conditions[0].Status = corev1.ConditionFalse
	}
	h.UpdateStatus(t, pod)
	return pod
}

func setReady(t *testing.T, pod *corev1.Pod, ready bool) {
	t.Helper()
	if !h.Get(t, pod) {
		t.Fatalf("pod %s is gone", pod.Name)
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	h.UpdateStatus(t, pod)
}

// cached waits until the cache (what the rollout budget is read from)
// shows the pod's readiness as ready.
func cached(t *testing.T, pod *corev1.Pod, ready bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got := &corev1.Pod{}
		if err := h.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), got); err == nil && isReady(got) == ready {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the cache never showed pod %s ready=%v", pod.Name, ready)
}

func isReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// remaining counts the pods that still exist and are not terminating.
func remaining(t *testing.T, pods ...*corev1.Pod) int {
	t.Helper()
	n := 0
	for _, p := range pods {
		got := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
		if h.Get(t, got) && got.UID == p.UID && got.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// held is karpenter_pods_evictions_held_by_rollout_budget_total.
func held() float64 { return testutil.ToFloat64(podsEvictionsHeldTotal) }

// (a) A node holding 3 of a 4-replica Deployment's pods, no PDB: the drain
// evicts one, then holds the others while the evicted pod's replacement is
// not Ready (1 of 4 unavailable, maxUnavailable 25% = 1), and goes on one
// at a time as replacements turn Ready.
func TestRolloutBudgetDrainsADeploymentOnePodAtATime(t *testing.T) {
	f := setup(t)
	_, node := managedNode(t, f, "rollout", nil)
	web := deploymentWorkload(t, "web", 4)
	onNode := []*corev1.Pod{web.pod(t, node.Name, false), web.pod(t, node.Name, false), web.pod(t, node.Name, false)}
	web.pod(t, "elsewhere", false)
	heldBefore := held()
	deleteNode(t, node)

	// Sync point: one pod went and the other two were held (the queue
	// tries all three at once).
	f.reconcileUntil(t, node.Name, "one pod is evicted and two are held", func() bool {
		return remaining(t, onNode...) == 2 && held()-heldBefore >= 2
	})
	// Its replacement comes up elsewhere, not Ready yet: still 1 of 4
	// unavailable, so the drain keeps waiting.
	replacement := web.pod(t, "elsewhere", true)
	cached(t, replacement, false)
	heldAfterReplacement := held()
	f.reconcileUntil(t, node.Name, "the held pods are tried again", func() bool { return held()-heldAfterReplacement >= 2 })
	if n := remaining(t, onNode...); n != 2 {
		t.Fatalf("%d of the node's 3 pods left, want 2: a second pod went while the first one's replacement was not Ready", n)
	}
	var heldPod *corev1.Pod
	for _, p := range onNode {
		if remaining(t, p) == 1 {
			heldPod = p
			break
		}
	}
	note := h.EventNote(t, "Pod", heldPod.Name, ReasonFailedDraining)
	if want := "Deployment default/web has 1 of 4 replicas unavailable (maxUnavailable 1)"; !strings.Contains(note, want) {
		t.Errorf("FailedDraining note = %q, want it to name %q", note, want)
	}

	// The replacement turns Ready: the next pod goes, then the last, each
	// once the previous one's replacement is Ready.
	setReady(t, replacement, true)
	f.reconcileUntil(t, node.Name, "a second pod is evicted", func() bool { return remaining(t, onNode...) == 1 })
	web.pod(t, "elsewhere", false)
	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
}

// (b) With a PDB selecting the pods, only the PDB governs: it allows three
// disruptions, so the three pods go at once although the Deployment's own
// budget would allow one.
func TestAPDBReplacesTheRolloutBudget(t *testing.T) {
	f := setup(t)
	_, node := managedNode(t, f, "rollout-pdb", nil)
	web := deploymentWorkload(t, "web-pdb", 4)
	onNode := []*corev1.Pod{web.pod(t, node.Name, false), web.pod(t, node.Name, false), web.pod(t, node.Name, false)}
	web.pod(t, "elsewhere", false)
	blockingPDB(t, "web-pdb", 3)
	heldBefore := held()
	deleteNode(t, node)

	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
	if n := remaining(t, onNode...); n != 0 {
		t.Errorf("%d pods left", n)
	}
	if n := held() - heldBefore; n != 0 {
		t.Errorf("%v evictions held by the rollout budget, want none: the PDB governs", n)
	}
}

// (c) With --respect-rollout-budget=false the three pods go at once, as
// upstream evicts them.
func TestRolloutBudgetsCanBeIgnored(t *testing.T) {
	f := setup(t)
	f.ignoreRolloutBudgets = true
	f.restart(t)
	_, node := managedNode(t, f, "rollout-off", nil)
	web := deploymentWorkload(t, "web-off", 4)
	onNode := []*corev1.Pod{web.pod(t, node.Name, false), web.pod(t, node.Name, false), web.pod(t, node.Name, false)}
	web.pod(t, "elsewhere", false)
	heldBefore := held()
	deleteNode(t, node)

	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
	if n := remaining(t, onNode...); n != 0 {
		t.Errorf("%d pods left", n)
	}
	if n := held() - heldBefore; n != 0 {
		t.Errorf("%v evictions held with rollout budgets ignored", n)
	}
}

// A StatefulSet (maxUnavailable 1) whose other pod is not Ready: its
// Ready pod on the draining node waits; the pod that is not Ready may go.
func TestRolloutBudgetOfAStatefulSet(t *testing.T) {
	f := setup(t)
	_, node := managedNode(t, f, "rollout-sts", nil)
	db := statefulSetWorkload(t, "db", 3)
	readyPod := db.pod(t, node.Name, false)
	unready := db.pod(t, node.Name, true)
	other := db.pod(t, "elsewhere", true)
	cached(t, other, false)
	heldBefore := held()
	deleteNode(t, node)

	f.reconcileUntil(t, node.Name, "the unready pod goes and the ready one is held", func() bool {
		return remaining(t, unready) == 0 && held()-heldBefore >= 2
	})
	if remaining(t, readyPod) != 1 {
		t.Fatal("the Ready pod was evicted while the StatefulSet had 2 of 3 replicas unavailable")
	}
	// The evicted pod comes back elsewhere and the other one turns Ready:
	// none unavailable, so the Ready pod goes.
	db.pod(t, "elsewhere", false)
	setReady(t, other, true)
	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
}

// The NodeClaim's terminationGracePeriod wins over the rollout budget: at
// the deadline minus their grace period, the held pods are deleted.
func TestTheTerminationDeadlineOverridesTheRolloutBudget(t *testing.T) {
	f := setup(t)
	_, node := managedNode(t, f, "rollout-deadline", nil)
	deadline := node.CreationTimestamp.Add(10 * time.Minute)
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
	h.Get(t, nc)
	nc.Annotations = map[string]string{karpv1.NodeClaimTerminationTimestampAnnotationKey: deadline.UTC().Format(time.RFC3339)}
	if err := h.Env.Client.Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	web := deploymentWorkload(t, "web-deadline", 4)
	a, b := web.pod(t, node.Name, false), web.pod(t, node.Name, false)
	unready := web.pod(t, "elsewhere", true)
	web.pod(t, "elsewhere", false)
	cached(t, unready, false)
	heldBefore := held()
	deleteNode(t, node)

	f.reconcileUntil(t, node.Name, "both pods are held", func() bool { return held()-heldBefore >= 2 })
	if remaining(t, a, b) != 2 {
		t.Fatal("a pod was evicted while the Deployment had 1 of 4 replicas unavailable")
	}
	h.Clock.SetTime(deadline.Add(time.Second))
	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
	for _, p := range []*corev1.Pod{a, b} {
		h.WaitForEvent(t, "Pod", p.Name, ReasonDisrupted)
	}
}
