package invariants

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// TestEvictedPodCarriesDisruptionTarget pins what the monitor relies on:
// the API server marks a pod it evicts with the DisruptionTarget
// condition, reason EvictionByEvictionAPI, before deleting it.
func TestEvictedPodCarriesDisruptionTarget(t *testing.T) {
	ns := namespace(t, "marked")
	readyNode(t, "marked-node", "")
	pod := runningPod(t, podSpec{ns: ns, name: "a", node: "marked-node", labels: map[string]string{"app": "a"}})
	if err := evict(t, pod); err != nil {
		t.Fatalf("evicting: %v", err)
	}
	got := &corev1.Pod{}
	if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), got); err != nil {
		t.Fatalf("a pod bound to a node stays, terminating, after its eviction: %v", err)
	}
	cond := disruptionTarget(got)
	if cond == nil || cond.Reason != reasonEvicted || got.DeletionTimestamp == nil {
		t.Fatalf("evicted pod: DisruptionTarget %+v, deletionTimestamp %v; want reason %s and a deletionTimestamp",
			cond, got.DeletionTimestamp, reasonEvicted)
	}
}

// TestEvictionWithinTheBudgetIsCountedNotAViolation evicts one of two
// healthy pods whose budget needs one.
func TestEvictionWithinTheBudgetIsCountedNotAViolation(t *testing.T) {
	ns := namespace(t, "room")
	readyNode(t, "room-node", "")
	labels := map[string]string{"app": "web"}
	a := runningPod(t, podSpec{ns: ns, name: "a", node: "room-node", labels: labels})
	runningPod(t, podSpec{ns: ns, name: "b", node: "room-node", labels: labels})
	budget(t, ns, "web", 1, 2)
	m := startMonitor(t)

	if err := evict(t, a); err != nil {
		t.Fatalf("the budget allows one eviction: %v", err)
	}
	r := waitReport(t, m, "the eviction", func(r Report) bool { return len(disruptionsOf(r, ns)) == 1 })
	if diff := cmp.Diff([]string{"a Evicted"}, disruptionsOf(r, ns)); diff != "" {
		t.Errorf("disruptions (-want +got):\n%s", diff)
	}
	if r.Evictions != 1 {
		t.Errorf("evictions = %d, want 1 (pods evicted before the monitor started are not counted)", r.Evictions)
	}
	r = m.Stop()
	if len(r.Violations) != 0 {
		t.Errorf("an eviction the budget allowed is reported as a violation: %s", r.String())
	}
}

// TestDirectDeleteOfProtectedPodIsAPDBViolation deletes, without the
// Eviction API, a pod its budget does not let go (the Eviction API
// refuses it).
func TestDirectDeleteOfProtectedPodIsAPDBViolation(t *testing.T) {
	ns := namespace(t, "direct")
	readyNode(t, "direct-node", "")
	labels := map[string]string{"app": "db"}
	a := runningPod(t, podSpec{ns: ns, name: "a", node: "direct-node", labels: labels})
	runningPod(t, podSpec{ns: ns, name: "b", node: "direct-node", labels: labels})
	budget(t, ns, "db", 2, 2)
	m := startMonitor(t)

	if err := evict(t, a); !apierrors.IsTooManyRequests(err) {
		t.Fatalf("evicting a pod whose budget allows nothing: got %v, want 429 Too Many Requests", err)
	}
	if err := env.Client.Delete(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	r := waitReport(t, m, "the deletion", func(r Report) bool { return len(r.Violations) > 0 })
	if diff := cmp.Diff([]string{"a Deleted"}, disruptionsOf(r, ns)); diff != "" {
		t.Errorf("disruptions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"PDBViolation direct/db"}, violationsOf(r.Violations, ns)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
	if r.Evictions != 0 {
		t.Errorf("a refused eviction was counted: %d evictions", r.Evictions)
	}
}

// TestDoNotDisruptPodEvictedIsCounted evicts a do-not-disrupt pod (no
// budget stops it).
func TestDoNotDisruptPodEvictedIsCounted(t *testing.T) {
	ns := namespace(t, "dnd")
	readyNode(t, "dnd-node", "")
	protected := runningPod(t, podSpec{ns: ns, name: "protected", node: "dnd-node",
		annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}})
	plain := runningPod(t, podSpec{ns: ns, name: "plain", node: "dnd-node",
		annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "false"}})
	m := startMonitor(t)

	for _, p := range []*corev1.Pod{protected, plain} {
		if err := evict(t, p); err != nil {
			t.Fatal(err)
		}
	}
	r := waitReport(t, m, "both evictions", func(r Report) bool { return len(disruptionsOf(r, ns)) == 2 })
	if diff := cmp.Diff([]string{"DoNotDisruptDisrupted dnd/protected"}, violationsOf(r.Violations, ns)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// TestPodsLostWithADeletedNode deletes a Node (no finalizer, so at once)
// with pods still on it: a voluntary disruption that never asked the
// budget. A pod tolerating the disrupted taint would not have been
// drained anyway and is not counted.
func TestPodsLostWithADeletedNode(t *testing.T) {
	ns := namespace(t, "lost")
	node := readyNode(t, "lost-node", "")
	labels := map[string]string{"app": "api"}
	runningPod(t, podSpec{ns: ns, name: "a", node: node.Name, labels: labels})
	runningPod(t, podSpec{ns: ns, name: "b", node: node.Name, labels: labels,
		annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}})
	runningPod(t, podSpec{ns: ns, name: "agent", node: node.Name,
		tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}})
	drained := runningPod(t, podSpec{ns: ns, name: "drained", node: node.Name})
	budget(t, ns, "api", 1, 2)
	m := startMonitor(t)

	// A pod drained before the node went (still terminating) was evicted,
	// not lost.
	if err := evict(t, drained); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	r := waitReport(t, m, "the lost pods", func(r Report) bool { return len(disruptionsOf(r, ns)) == 3 })
	if diff := cmp.Diff([]string{"drained Evicted", "a LostWithNode", "b LostWithNode"}, disruptionsOf(r, ns)); diff != "" {
		t.Errorf("disruptions (-want +got):\n%s", diff)
	}
	want := []string{"DoNotDisruptDisrupted lost/b", "PDBViolation lost/api"}
	if diff := cmp.Diff(want, violationsOf(r.Violations, ns)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// TestInvoluntaryNodeIsExcused deletes a node the harness reported as
// interrupted: its pods' losses are not karp's voluntary disruptions.
func TestInvoluntaryNodeIsExcused(t *testing.T) {
	ns := namespace(t, "reclaimed")
	node := readyNode(t, "reclaimed-node", "")
	runningPod(t, podSpec{ns: ns, name: "a", node: node.Name, labels: map[string]string{"app": "q"}})
	budget(t, ns, "q", 1, 1)
	m := startMonitor(t)

	if err := env.Client.Delete(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	m.Involuntary(node.Name) // told after the fact, as a harness may
	waitReport(t, m, "the excused loss", func(r Report) bool { return len(violationsOf(r.Excused, ns)) > 0 })
	r := m.Stop()
	if got := violationsOf(r.Violations, ns); len(got) != 0 {
		t.Errorf("violations on an involuntary node: %v", got)
	}
	if got := disruptionsOf(r, ns); len(got) != 0 {
		t.Errorf("disruptions on an involuntary node: %v", got)
	}
	if diff := cmp.Diff([]string{"PDBViolation reclaimed/q"}, violationsOf(r.Excused, ns)); diff != "" {
		t.Errorf("excused (-want +got):\n%s", diff)
	}
	if !strings.Contains(r.String(), "excused: ") {
		t.Errorf("the summary does not list the excused violation:\n%s", r.String())
	}
}

// TestControllerDeletionsAreNotDisruptions deletes pods the way their
// ReplicaSet would when scaled down, on a node karp is disrupting and on
// one it is not; only a deletion the ReplicaSet had no reason for, on the
// disrupted node, is karp's.
func TestControllerDeletionsAreNotDisruptions(t *testing.T) {
	ns := namespace(t, "owned")
	readyNode(t, "owned-calm", "")
	readyNode(t, "owned-disrupted", "", karpv1.DisruptedNoScheduleTaint)
	rs, ref := replicaSet(t, ns, "app", 3)
	labels := map[string]string{"app": "app"}
	onCalm := runningPod(t, podSpec{ns: ns, name: "calm", node: "owned-calm", labels: labels, owner: ref})
	scaled := runningPod(t, podSpec{ns: ns, name: "scaled", node: "owned-disrupted", labels: labels, owner: ref})
	taken := runningPod(t, podSpec{ns: ns, name: "taken", node: "owned-disrupted", labels: labels, owner: ref})
	ds := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds-uid", Controller: ptrTrue()}
	agent := runningPod(t, podSpec{ns: ns, name: "agent", node: "owned-disrupted", owner: &ds})
	_, stsRef := statefulSet(t, ns, "web", 1)
	stsPod := runningPod(t, podSpec{ns: ns, name: "web-0", node: "owned-disrupted", labels: map[string]string{"app": "web"}, owner: stsRef})
	m := startMonitor(t)
	ctx := t.Context()

	// 1. A deletion on a calm node is the controller's business; so is a
	// DaemonSet's deletion of its own pod.
	for _, p := range []*corev1.Pod{onCalm, agent} {
		if err := env.Client.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	// 2. The ReplicaSet scaled to 1: one pod of two on the disrupted node
	// goes because of it. The monitor may see the ReplicaSet's update
	// after the pod's deletion (separate watches); here it does.
	if err := env.Client.Delete(ctx, scaled); err != nil {
		t.Fatal(err)
	}
	rs.Spec.Replicas = ptr32(1)
	if err := env.Client.Update(ctx, rs); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, m, rs.Namespace, rs.Name, 1)
	// 3. The last pod, which the ReplicaSet still wants, deleted directly
	// on the disrupted node.
	if err := env.Client.Delete(ctx, taken); err != nil {
		t.Fatal(err)
	}
	// 4. A StatefulSet's pod it still wants, deleted directly on the
	// disrupted node.
	if err := env.Client.Delete(ctx, stsPod); err != nil {
		t.Fatal(err)
	}
	waitReport(t, m, "the direct deletions", func(r Report) bool { return len(disruptionsOf(r, ns)) >= 2 })
	r := m.Stop()
	if diff := cmp.Diff([]string{"taken Deleted", "web-0 Deleted"}, disruptionsOf(r, ns)); diff != "" {
		t.Errorf("disruptions (-want +got):\n%s", diff)
	}
}

// TestQuietClusterReportsNothing runs pods, taints a node and updates pod
// status without disrupting anything.
func TestQuietClusterReportsNothing(t *testing.T) {
	ns := namespace(t, "quiet")
	node := readyNode(t, "quiet-node", "")
	labels := map[string]string{"app": "w"}
	a := runningPod(t, podSpec{ns: ns, name: "a", node: node.Name, labels: labels})
	budget(t, ns, "w", 1, 1)
	m := startMonitor(t)
	ctx := t.Context()

	node.Spec.Taints = []corev1.Taint{karpv1.DisruptedNoScheduleTaint}
	if err := env.Client.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	a.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	if err := env.Client.Status().Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	// A pod that finished, then deleted, was not disrupted either.
	done := runningPod(t, podSpec{ns: ns, name: "job", node: node.Name})
	done.Status.Phase = corev1.PodSucceeded
	if err := env.Client.Status().Update(ctx, done); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, done, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitGone(t, m, ns, "job")
	r := m.Stop()
	if got := disruptionsOf(r, ns); len(got) != 0 {
		t.Errorf("disruptions in a quiet namespace: %v", got)
	}
	if got := violationsOf(r.Violations, ns); len(got) != 0 {
		t.Errorf("violations in a quiet namespace: %v", got)
	}
}

func ptr32(v int32) *int32 { return &v }

// waitReplicas waits until the monitor's ReplicaSet cache has the
// replicas, as the ReplicaSet controller sees its own update before it
// deletes pods.
func waitReplicas(t *testing.T, m *Monitor, ns, name string, replicas int32) {
	t.Helper()
	waitReport(t, m, "the ReplicaSet update", func(Report) bool {
		rs, err := m.rsLister.ReplicaSets(ns).Get(name)
		return err == nil && rs.Spec.Replicas != nil && *rs.Spec.Replicas == replicas
	})
}

// waitGone waits until the monitor has seen the pod's deletion.
func waitGone(t *testing.T, m *Monitor, ns, name string) {
	t.Helper()
	waitReport(t, m, "the pod's deletion", func(Report) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, rec := range m.pods {
			if rec.pod.Namespace == ns && rec.pod.Name == name {
				return false
			}
		}
		return true
	})
}

// TestVanishedPodsAreUnobserved hands the monitor what an informer hands
// it when a pod's deletion happened while its watch was down (a tombstone
// with the last state it saw): the pod is counted unobserved, never
// guessed evicted or lost; a pod that had finished is not counted.
func TestVanishedPodsAreUnobserved(t *testing.T) {
	ns := namespace(t, "vanished")
	readyNode(t, "vanished-node", "")
	running := runningPod(t, podSpec{ns: ns, name: "running", node: "vanished-node"})
	finished := runningPod(t, podSpec{ns: ns, name: "finished", node: "vanished-node"})
	finished.Status.Phase = corev1.PodSucceeded
	if err := env.Client.Status().Update(t.Context(), finished); err != nil {
		t.Fatal(err)
	}
	m := startMonitor(t)
	// Both pods must be known before they vanish: a pod the monitor never
	// saw cannot vanish from it (the informer hands over its initial list
	// one pod at a time).
	waitReport(t, m, "both pods, the finished one terminal", func(Report) bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		rec := m.pods[finished.UID]
		return rec != nil && terminal(rec.pod) && m.pods[running.UID] != nil
	})

	for _, p := range []*corev1.Pod{running, finished} {
		m.onPod(cache.DeletedFinalStateUnknown{Key: podKey(p), Obj: p}, true, false)
	}
	r := m.Stop()
	if r.Unobserved != 1 || len(r.UnobservedPods) != 1 || r.UnobservedPods[0] != podKey(running) {
		t.Errorf("unobserved %d %v, want only %s", r.Unobserved, r.UnobservedPods, podKey(running))
	}
	if got := disruptionsOf(r, ns); len(got) != 0 {
		t.Errorf("vanished pods were classified: %v", got)
	}
}
