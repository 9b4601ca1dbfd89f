package invariants

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// flush settles the deleted Nodes and direct deletions seen before cutoff
// (all of them when final). The watches' caches may lag (one watch
// relisting after an API server restart while another already delivered
// its news), so what they suggest is confirmed by reading the API server:
// a pod counts as lost with its Node only if it still exists there, bound
// to the gone Node and not being deleted; a direct deletion counts only if
// its namespace and controller, read now, do not explain it. When the API
// server cannot be read, the item waits for the next flush; the final
// flush falls back to the caches.
func (m *Monitor) flush(ctx context.Context, cutoff time.Time, final bool) {
	m.mu.Lock()
	gone, deletions := m.takeDue(cutoff, final)
	candidates := make([][]*corev1.Pod, len(gone))
	for i, g := range gone {
		if _, back := m.nodes[g.name]; back {
			continue
		}
		for _, rec := range m.pods {
			p := rec.pod
			if !rec.done && p.Spec.NodeName == g.name && p.DeletionTimestamp == nil && !terminal(p) && staysWithNode(p) {
				candidates[i] = append(candidates[i], p)
			}
		}
	}
	m.mu.Unlock()

	// 1. Read the API server, without the lock: the watches go on.
	lost, retryGone := m.confirmLost(ctx, gone, candidates, final)
	explained, retryDeletions := m.explainDeletions(ctx, deletions, final)

	// 2. Commit, under the lock, what was confirmed.
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, g := range gone {
		if slices.Contains(retryGone, g) {
			continue
		}
		var recs []*podRecord
		for _, p := range candidates[i] {
			if rec := m.pods[p.UID]; rec != nil && !rec.done && lost[p.UID] {
				recs = append(recs, rec)
			}
		}
		slices.SortFunc(recs, func(a, b *podRecord) int { return strings.Compare(podKey(a.pod), podKey(b.pod)) })
		m.disrupt(recs, CauseLostWithNode)
	}
	for i, d := range deletions {
		if !explained[i] {
			m.raw.Disruptions = append(m.raw.Disruptions, d.disruptions...)
			m.raw.Violations = append(m.raw.Violations, d.violations...)
		}
	}
	m.gone = append(retryGone, m.gone...)
	m.deletions = append(retryDeletions, m.deletions...)
}

// confirmLost reads each candidate pod of the gone nodes from the API
// server; it returns which are still there (lost) and the nodes to retry
// because the API server could not be read.
func (m *Monitor) confirmLost(ctx context.Context, gone []goneNode, candidates [][]*corev1.Pod, final bool) (map[types.UID]bool, []goneNode) {
	lost := map[types.UID]bool{}
	var retry []goneNode
	for i, g := range gone {
		ok := true
		for _, p := range candidates[i] {
			still, err := m.stillOn(ctx, p, g.name)
			switch {
			case err == nil:
				lost[p.UID] = still
			case final:
				lost[p.UID] = true
			default:
				ok = false
			}
		}
		if !ok {
			retry = append(retry, g)
		}
	}
	return lost, retry
}

// explainDeletions decides for each direct deletion whether its owner
// explains it; the ones the API server could not be read for are retried
// (and reported explained for now).
func (m *Monitor) explainDeletions(ctx context.Context, deletions []pendingDeletion, final bool) ([]bool, []pendingDeletion) {
	explained := make([]bool, len(deletions))
	var retry []pendingDeletion
	for i, d := range deletions {
		why, err := m.ownerExplains(ctx, d)
		switch {
		case err == nil:
			explained[i] = why
		case final:
			explained[i] = m.ownerExplainsCached(d)
		default:
			retry = append(retry, d)
			explained[i] = true
		}
	}
	return explained, retry
}

// takeDue removes from the queues the items seen before cutoff (all of
// them when final) and returns them; m.mu is held.
func (m *Monitor) takeDue(cutoff time.Time, final bool) ([]goneNode, []pendingDeletion) {
	var dueGone []goneNode
	keepGone := m.gone[:0]
	for _, g := range m.gone {
		if final || !g.at.After(cutoff) {
			dueGone = append(dueGone, g)
		} else {
			keepGone = append(keepGone, g)
		}
	}
	m.gone = keepGone
	var dueDeletions []pendingDeletion
	keepDeletions := m.deletions[:0]
	for _, d := range m.deletions {
		if final || !d.at.After(cutoff) {
			dueDeletions = append(dueDeletions, d)
		} else {
			keepDeletions = append(keepDeletions, d)
		}
	}
	m.deletions = keepDeletions
	return dueGone, dueDeletions
}

// stillOn reads the pod from the API server: is it still bound to the
// gone node, neither deleting nor marked for a disruption? A pod that is
// gone, or going, is left to its own watch to classify.
func (m *Monitor) stillOn(ctx context.Context, pod *corev1.Pod, node string) (bool, error) {
	live, err := m.clientset.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return live.UID == pod.UID && live.Spec.NodeName == node && live.DeletionTimestamp == nil &&
		disruptionTarget(live) == nil && !terminal(live), nil
}

// ownerExplains reads the pod's namespace and controller from the API
// server: did they have a reason to delete it? The namespace is going, the
// ReplicaSet or StatefulSet is gone or going, or it had at least as many
// other pods as it wanted (a scale-down, a rollout). The wanted replicas
// are the fewer of those seen at the deletion and now, so a scale-down
// seen late still counts.
func (m *Monitor) ownerExplains(ctx context.Context, d pendingDeletion) (bool, error) {
	ns, err := m.clientset.CoreV1().Namespaces().Get(ctx, d.pod.Namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	case ns.DeletionTimestamp != nil:
		return true, nil
	}
	owner := metav1.GetControllerOf(d.pod)
	if owner == nil || !followsReplicas(owner) {
		return false, nil
	}
	var (
		obj      metav1.Object
		replicas *int32
	)
	if owner.Kind == "ReplicaSet" {
		rs, err := m.clientset.AppsV1().ReplicaSets(d.pod.Namespace).Get(ctx, owner.Name, metav1.GetOptions{})
		if err != nil {
			return apierrors.IsNotFound(err), ignoreNotFound(err)
		}
		obj, replicas = rs, rs.Spec.Replicas
	} else {
		sts, err := m.clientset.AppsV1().StatefulSets(d.pod.Namespace).Get(ctx, owner.Name, metav1.GetOptions{})
		if err != nil {
			return apierrors.IsNotFound(err), ignoreNotFound(err)
		}
		obj, replicas = sts, sts.Spec.Replicas
	}
	return explainedByReplicas(d, obj, owner, replicas), nil
}

// ownerExplainsCached is ownerExplains from the watches' caches.
func (m *Monitor) ownerExplainsCached(d pendingDeletion) bool {
	if ns, err := m.nsLister.Get(d.pod.Namespace); apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp != nil) {
		return true
	}
	owner := metav1.GetControllerOf(d.pod)
	if owner == nil || !followsReplicas(owner) {
		return false
	}
	replicas := m.replicasOf(d.pod.Namespace, owner)
	return replicas < 0 || d.replicas < 0 || d.others >= min(replicas, d.replicas)
}

func explainedByReplicas(d pendingDeletion, obj metav1.Object, owner *metav1.OwnerReference, replicas *int32) bool {
	if obj.GetUID() != owner.UID || obj.GetDeletionTimestamp() != nil || d.replicas < 0 {
		return true
	}
	want := int32(1)
	if replicas != nil {
		want = *replicas
	}
	return d.others >= min(want, d.replicas)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
