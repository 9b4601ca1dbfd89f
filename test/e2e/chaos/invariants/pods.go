package invariants

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// The DisruptionTarget reasons the monitor tells apart. The API server
// sets EvictionByEvictionAPI on a pod it evicts, before deleting it; the
// pod garbage collector sets DeletionByPodGC on a pod whose Node is gone.
const (
	reasonEvicted = "EvictionByEvictionAPI"
	reasonPodGC   = "DeletionByPodGC"
)

// mirrorAnnotationKey marks a static pod's mirror.
const mirrorAnnotationKey = "kubernetes.io/config.mirror"

func (m *Monitor) onPod(obj any, deleted, initial bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if pod, ok := t.Obj.(*corev1.Pod); ok {
			m.mu.Lock()
			m.podVanished(pod)
			m.mu.Unlock()
		}
		return
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if initial {
		// Already ending when the monitor started: not this run's.
		m.pods[pod.UID] = &podRecord{pod: pod, done: pod.DeletionTimestamp != nil || disruptionTarget(pod) != nil}
		return
	}
	m.observePod(pod, deleted)
}

// observePod accounts for one event of a pod. A pod's end is classified
// once, from the first event that shows it: a DisruptionTarget condition,
// a deletionTimestamp or its deletion. prev, the state before the event,
// decides whether it was healthy and what it carried.
func (m *Monitor) observePod(pod *corev1.Pod, deleted bool) {
	rec := m.pods[pod.UID]
	if rec == nil {
		rec = &podRecord{pod: pod}
		m.pods[pod.UID] = rec
	}
	prev := rec.pod
	defer func() {
		rec.pod = pod
		if deleted {
			delete(m.pods, pod.UID)
		}
	}()
	if rec.done || terminal(prev) {
		return
	}
	if cond := disruptionTarget(pod); cond != nil {
		switch cond.Reason {
		case reasonEvicted:
			m.raw.Evictions++
			m.disrupt([]*podRecord{rec}, CauseEvicted)
		case reasonPodGC:
			m.disrupt([]*podRecord{rec}, CauseLostWithNode)
		default:
			// The taint manager, the scheduler's preemption, the kubelet:
			// Kubernetes' own disruptions, not karp's.
			rec.done = true
		}
		return
	}
	if pod.DeletionTimestamp == nil && !deleted {
		return
	}
	switch {
	case terminal(pod):
		rec.done = true
	case pod.Spec.NodeName != "" && !m.removed[pod.Spec.NodeName].IsZero():
		m.disrupt([]*podRecord{rec}, CauseLostWithNode)
	case m.deletedByDisruptor(prev):
		m.disrupt([]*podRecord{rec}, CauseDeleted)
	default:
		rec.done = true
	}
}

// podVanished accounts for a pod whose deletion the watch missed (it was
// down): how it went is unknown.
func (m *Monitor) podVanished(last *corev1.Pod) {
	rec := m.pods[last.UID]
	if rec == nil {
		return
	}
	delete(m.pods, last.UID)
	if !rec.done && !terminal(rec.pod) {
		m.raw.Unobserved++
	}
}

// deletedByDisruptor reports whether a pod deleted without an eviction
// was deleted by a disruptor rather than by its own controller: it has no
// controller, or it ran on a node karp was disrupting and its controller
// had no reason to delete it (a ReplicaSet above its replicas, an owner or
// namespace going away).
func (m *Monitor) deletedByDisruptor(pod *corev1.Pod) bool {
	if ns, err := m.nsLister.Get(pod.Namespace); apierrors.IsNotFound(err) || (err == nil && ns.DeletionTimestamp != nil) {
		return false
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return true
	}
	if !m.disrupting(pod.Spec.NodeName) {
		return false
	}
	if owner.Kind != "ReplicaSet" {
		return true
	}
	rs, err := m.rsLister.ReplicaSets(pod.Namespace).Get(owner.Name)
	if err != nil || rs.UID != owner.UID || rs.DeletionTimestamp != nil {
		return false
	}
	want := int32(1)
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	others := int32(0)
	for _, rec := range m.pods {
		p := rec.pod
		if p.UID != pod.UID && p.DeletionTimestamp == nil && !terminal(p) && isControlledBy(p, owner.UID) {
			others++
		}
	}
	return others < want
}

// disrupting reports whether karp is disrupting the node: it is deleting,
// or carries the karpenter.sh/disrupted taint.
func (m *Monitor) disrupting(nodeName string) bool {
	node := m.nodes[nodeName]
	if node == nil {
		return false
	}
	return node.DeletionTimestamp != nil || slices.ContainsFunc(node.Spec.Taints, karpv1.IsDisruptingTaint)
}

// flushGone counts as lost the pods still running on Nodes deleted
// before cutoff (all of them when cutoff is zero).
func (m *Monitor) flushGone(cutoff time.Time) {
	keep := m.gone[:0]
	for _, g := range m.gone {
		if !cutoff.IsZero() && g.at.After(cutoff) {
			keep = append(keep, g)
			continue
		}
		if _, back := m.nodes[g.name]; back {
			continue
		}
		var lost []*podRecord
		for _, rec := range m.pods {
			p := rec.pod
			if !rec.done && p.Spec.NodeName == g.name && p.DeletionTimestamp == nil && !terminal(p) && staysWithNode(p) {
				lost = append(lost, rec)
			}
		}
		slices.SortFunc(lost, func(a, b *podRecord) int { return strings.Compare(podKey(a.pod), podKey(b.pod)) })
		m.disrupt(lost, CauseLostWithNode)
	}
	m.gone = keep
}

// staysWithNode reports whether a pod on a deleted node would have been
// drained: mirror pods and pods tolerating the disrupted taint are left
// on the node by design.
func staysWithNode(pod *corev1.Pod) bool {
	if _, mirror := pod.Annotations[mirrorAnnotationKey]; mirror {
		return false
	}
	for _, t := range pod.Spec.Tolerations {
		if tolerates(t, karpv1.DisruptedNoScheduleTaint) {
			return false
		}
	}
	return true
}

// tolerates reports whether the toleration matches the taint (key,
// operator, value and effect, as the scheduler matches them).
func tolerates(tol corev1.Toleration, taint corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case corev1.TolerationOpEqual, "":
		return tol.Key != "" && tol.Value == taint.Value
	default:
		return false
	}
}

// disrupt records recs (pods of one node, or one pod) as voluntarily
// disrupted together, then checks do-not-disrupt and the budgets. Each
// record's pod is still its state before the disruption.
func (m *Monitor) disrupt(recs []*podRecord, cause Cause) {
	if len(recs) == 0 {
		return
	}
	now := m.clock.Now()
	for _, rec := range recs {
		p := rec.pod
		d := Disruption{Pod: podKey(p), Node: p.Spec.NodeName, Cause: cause, At: now,
			Healthy: healthy(p), DoNotDisrupt: p.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true"}
		m.raw.Disruptions = append(m.raw.Disruptions, d)
		if d.DoNotDisrupt {
			m.raw.Violations = append(m.raw.Violations, Violation{Kind: KindDoNotDisrupt, Object: d.Pod, Node: d.Node, At: now,
				Message: fmt.Sprintf("pod annotated %s: \"true\" was %s", karpv1.DoNotDisruptAnnotationKey, describeCause(cause))})
		}
	}
	m.checkBudgets(recs, cause, now)
	for _, rec := range recs {
		rec.done = true
	}
}

// checkBudgets records a violation for every budget the disruption of
// recs took below its desired healthy count.
func (m *Monitor) checkBudgets(recs []*podRecord, cause Cause, now time.Time) {
	keys := make([]string, 0, len(m.budgets))
	for k := range m.budgets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		pdb := m.budgets[key]
		var lost []string
		for _, rec := range recs {
			if healthy(rec.pod) && pdbSelects(pdb, rec.pod) {
				lost = append(lost, rec.pod.Name)
			}
		}
		if len(lost) == 0 {
			continue
		}
		current, expected := 0, 0
		for _, rec := range m.pods {
			if rec.done || !pdbSelects(pdb, rec.pod) {
				continue
			}
			if !terminal(rec.pod) {
				expected++
			}
			if healthy(rec.pod) {
				current++
			}
		}
		desired := desiredHealthy(pdb, expected)
		if after := current - len(lost); after < desired {
			m.raw.Violations = append(m.raw.Violations, Violation{Kind: KindPDBViolation, Object: key, Node: recs[0].pod.Spec.NodeName, At: now,
				Message: fmt.Sprintf("%s %s left %d healthy pods, the budget needs %d",
					strings.Join(lost, ","), describeCause(cause), after, desired)})
		}
	}
}

func describeCause(c Cause) string {
	switch c {
	case CauseEvicted:
		return "evicted"
	case CauseDeleted:
		return "deleted without an eviction"
	default:
		return "lost with its node"
	}
}

func disruptionTarget(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func isControlledBy(pod *corev1.Pod, uid types.UID) bool {
	owner := metav1.GetControllerOf(pod)
	return owner != nil && owner.UID == uid
}

func podKey(pod *corev1.Pod) string { return pod.Namespace + "/" + pod.Name }
