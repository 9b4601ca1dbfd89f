package invariants

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	case m.maybeDisruptor(prev):
		m.deferDeletion(rec)
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
		m.raw.UnobservedPods = append(m.raw.UnobservedPods, podKey(last))
	}
}

// maybeDisruptor reports whether a pod deleted without an eviction may
// have been deleted by a disruptor rather than by its own controller: it
// has no controller, or it ran on a node karp was disrupting and its
// controller is a ReplicaSet or StatefulSet (whose pods karp evicts; a
// DaemonSet or Job deletes its own pods directly). Whether the controller
// had a reason to delete it is decided after the delay (ownerExplains),
// once the owner's watch has caught up.
func (m *Monitor) maybeDisruptor(pod *corev1.Pod) bool {
	owner := metav1.GetControllerOf(pod)
	if owner == nil {
		return true
	}
	return followsReplicas(owner) && m.disrupting(pod.Spec.NodeName)
}

// followsReplicas reports whether the owner is a controller whose replicas the
// monitor follows.
func followsReplicas(owner *metav1.OwnerReference) bool {
	return owner.Kind == "ReplicaSet" || owner.Kind == "StatefulSet"
}

// pendingDeletion is a direct deletion judged at the moment it was seen
// (the budgets' healthy pods then), committed after the delay unless the
// pod's owner or namespace explains it.
type pendingDeletion struct {
	pod         *corev1.Pod
	at          time.Time
	disruptions []Disruption
	violations  []Violation
	// others is how many other live pods the pod's controller had, and
	// replicas how many it wanted, when the deletion was seen.
	others, replicas int32
}

// deferDeletion judges a direct deletion now and queues it.
func (m *Monitor) deferDeletion(rec *podRecord) {
	now := m.clock.Now()
	ds, vs := m.judge([]*podRecord{rec}, CauseDeleted, now)
	p := pendingDeletion{pod: rec.pod, at: now, disruptions: ds, violations: vs, replicas: -1}
	if owner := metav1.GetControllerOf(rec.pod); owner != nil && followsReplicas(owner) {
		p.replicas = m.replicasOf(rec.pod.Namespace, owner)
		for _, other := range m.pods {
			o := other.pod
			if o.UID != rec.pod.UID && o.DeletionTimestamp == nil && !terminal(o) && isControlledBy(o, owner.UID) {
				p.others++
			}
		}
	}
	rec.done = true
	m.deletions = append(m.deletions, p)
}

// replicasOf is the ReplicaSet's or StatefulSet's wanted replicas, -1
// when it is gone or going (its pods are garbage).
func (m *Monitor) replicasOf(ns string, owner *metav1.OwnerReference) int32 {
	var (
		obj      metav1.Object
		replicas *int32
	)
	switch owner.Kind {
	case "ReplicaSet":
		rs, err := m.rsLister.ReplicaSets(ns).Get(owner.Name)
		if err != nil {
			return -1
		}
		obj, replicas = rs, rs.Spec.Replicas
	case "StatefulSet":
		sts, err := m.stsLister.StatefulSets(ns).Get(owner.Name)
		if err != nil {
			return -1
		}
		obj, replicas = sts, sts.Spec.Replicas
	default:
		return -1
	}
	if obj.GetUID() != owner.UID || obj.GetDeletionTimestamp() != nil {
		return -1
	}
	if replicas == nil {
		return 1
	}
	return *replicas
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
// disrupted together.
func (m *Monitor) disrupt(recs []*podRecord, cause Cause) {
	ds, vs := m.judge(recs, cause, m.clock.Now())
	m.raw.Disruptions = append(m.raw.Disruptions, ds...)
	m.raw.Violations = append(m.raw.Violations, vs...)
	for _, rec := range recs {
		rec.done = true
	}
}

// judge returns recs' disruptions and the violations they make:
// do-not-disrupt pods disrupted, and budgets taken below their desired
// healthy count. Each record's pod is still its state before the
// disruption and not yet done.
func (m *Monitor) judge(recs []*podRecord, cause Cause, now time.Time) ([]Disruption, []Violation) {
	var ds []Disruption
	var vs []Violation
	for _, rec := range recs {
		p := rec.pod
		d := Disruption{Pod: podKey(p), Node: p.Spec.NodeName, Cause: cause, At: now,
			Healthy: healthy(p), DoNotDisrupt: p.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true"}
		ds = append(ds, d)
		if d.DoNotDisrupt {
			vs = append(vs, Violation{Kind: KindDoNotDisrupt, Object: d.Pod, Node: d.Node, At: now, Cause: cause,
				Message: fmt.Sprintf("pod annotated %s: \"true\" was %s", karpv1.DoNotDisruptAnnotationKey, describeCause(cause))})
		}
	}
	return ds, append(vs, m.checkBudgets(recs, cause, now)...)
}

// checkBudgets returns a violation for every budget the disruption of
// recs takes below its desired healthy count.
func (m *Monitor) checkBudgets(recs []*podRecord, cause Cause, now time.Time) []Violation {
	var vs []Violation
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
			vs = append(vs, Violation{Kind: KindPDBViolation, Object: key, Node: recs[0].pod.Spec.NodeName, At: now, Cause: cause,
				Message: fmt.Sprintf("%s %s left %d healthy pods, the budget needs %d",
					strings.Join(lost, ","), describeCause(cause), after, desired)})
		}
	}
	return vs
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
