package manifest

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Cluster is what the manifests describe once the workload controllers
// have run: the pods waiting for capacity and the existing nodes with
// their pods.
type Cluster struct {
	// Pending are the pods that need a node: explicit unbound pods, then
	// the pods of Deployments, ReplicaSets, StatefulSets and Jobs, in
	// manifest order.
	Pending []*corev1.Pod
	// Nodes are the existing nodes in manifest order.
	Nodes []*NodeState
	// Warnings explain input that was read but ignored.
	Warnings []string
}

// NodeState is an existing node and the pods bound to it.
type NodeState struct {
	Node *corev1.Node
	Pods []*corev1.Pod
}

// expander holds the state of one Expand call.
type expander struct {
	set        *Set
	out        *Cluster
	priorities *priorities
	// owned counts the active explicit pods per controller, keyed by
	// "Kind namespace/name"; ownedNames lists their names.
	owned map[string][]string
}

// Expand runs the workload controllers over the Set: each Deployment,
// ReplicaSet, StatefulSet and Job creates the pods it is missing (counting
// explicit pods it owns), pods get their priority from PriorityClasses,
// and bound pods join their nodes. DaemonSets are left to the caller (they
// are overhead on every node, not pending pods). The Set's pods are
// completed in place (spec.priority) and shared with the Cluster.
func Expand(set *Set) (*Cluster, error) {
	e := &expander{set: set, out: &Cluster{}, priorities: newPriorities(set.PriorityClasses), owned: map[string][]string{}}
	e.explicitPods()
	for _, steps := range []func() error{e.deployments, e.replicaSets, e.statefulSets, e.jobs} {
		if err := steps(); err != nil {
			return nil, err
		}
	}
	return e.out, nil
}

// explicitPods sorts the given pods into pending and bound, skipping
// terminal pods and unbound DaemonSet pods (their DaemonSet accounts for
// them).
func (e *expander) explicitPods() {
	nodes := map[string]*NodeState{}
	for _, n := range e.set.Nodes {
		ns := &NodeState{Node: n}
		nodes[n.Name] = ns
		e.out.Nodes = append(e.out.Nodes, ns)
	}
	for _, p := range e.set.Pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		// The Set is ours to complete: pods get their priority in place
		// (copying 20,000 pods costs more than the rest of the expansion).
		pod := p
		e.warn(e.priorities.apply(pod))
		if ref := metav1.GetControllerOf(pod); ref != nil {
			key := objectKey(ref.Kind, pod.Namespace, ref.Name)
			e.owned[key] = append(e.owned[key], pod.Name)
		}
		switch {
		case pod.Spec.NodeName != "":
			ns, ok := nodes[pod.Spec.NodeName]
			if !ok {
				e.warn(fmt.Sprintf("Pod %s/%s: bound to node %q, which is not among the manifests; ignored", pod.Namespace, pod.Name, pod.Spec.NodeName))
				continue
			}
			ns.Pods = append(ns.Pods, pod)
		case ownedByKind(pod, "DaemonSet"):
			// Its DaemonSet is counted as overhead on every node.
		default:
			e.out.Pending = append(e.out.Pending, pod)
		}
	}
}

func (e *expander) warn(msg string) {
	if msg != "" {
		e.out.Warnings = append(e.out.Warnings, msg)
	}
}

func ownedByKind(pod *corev1.Pod, kind string) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == kind {
			return true
		}
	}
	return false
}

// checkSelector refuses a workload whose selector does not select its
// template's labels, as the API server's validation does.
func (e *expander) checkSelector(kind string, obj metav1.Object, sel *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec) error {
	key := objectKey(kind, obj.GetNamespace(), obj.GetName())
	src := e.set.sources[key]
	if sel == nil {
		return &Error{Source: src, Object: key, Err: fmt.Errorf("spec.selector: Required value")}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return &Error{Source: src, Object: key, Err: fmt.Errorf("spec.selector: Invalid value: %w", err)}
	}
	if s.Empty() {
		return &Error{Source: src, Object: key, Err: fmt.Errorf("spec.selector: Invalid value: empty selector is invalid for %s", kind)}
	}
	if !s.Matches(labels.Set(tmpl.Labels)) {
		return &Error{Source: src, Object: key, Err: fmt.Errorf("spec.template.metadata.labels: Invalid value: %v: `selector` does not match template `labels`", tmpl.Labels)}
	}
	return nil
}

// newPod is what a controller creates from its template.
func (e *expander) newPod(tmpl *corev1.PodTemplateSpec, namespace, name string, owner metav1.OwnerReference) *corev1.Pod {
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, UID: uidFor("Pod", namespace, name),
			Labels: copyMap(tmpl.Labels), Annotations: copyMap(tmpl.Annotations),
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: *tmpl.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		}}},
	}
	e.warn(e.priorities.apply(pod))
	return pod
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m)+3)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// controllerRef is the owner reference a controller puts on its pods.
func controllerRef(apiVersion, kind, name string, uid metav1.Object) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid.GetUID(),
		Controller: &t, BlockOwnerDeletion: &t}
}

func ensureUID(kind string, obj metav1.Object) {
	if obj.GetUID() == "" {
		obj.SetUID(uidFor(kind, obj.GetNamespace(), obj.GetName()))
	}
}

func replicas(r *int32) int {
	if r == nil {
		return 1
	}
	return int(max(*r, 0))
}

// deployments expand each Deployment without a ReplicaSet of its own in
// the manifests into the ReplicaSet it would create: <name>-<hash>.
func (e *expander) deployments() error {
	hasRS := map[string]bool{}
	for _, rs := range e.set.ReplicaSets {
		if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" {
			hasRS[objectKey("Deployment", rs.Namespace, ref.Name)] = true
		}
	}
	for _, d := range e.set.Deployments {
		if err := e.checkSelector("Deployment", d, d.Spec.Selector, &d.Spec.Template); err != nil {
			return err
		}
		if hasRS[objectKey("Deployment", d.Namespace, d.Name)] {
			continue
		}
		ensureUID("Deployment", d)
		hash := templateHash(d.Spec.Template)
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace}}
		rs.OwnerReferences = []metav1.OwnerReference{controllerRef("apps/v1", "Deployment", d.Name, d)}
		ensureUID("ReplicaSet", rs)
		tmpl := d.Spec.Template.DeepCopy()
		if tmpl.Labels == nil {
			tmpl.Labels = map[string]string{}
		}
		tmpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
		e.replicaSetPods(rs, tmpl, replicas(d.Spec.Replicas))
	}
	return nil
}

func (e *expander) replicaSets() error {
	for _, rs := range e.set.ReplicaSets {
		if err := e.checkSelector("ReplicaSet", rs, rs.Spec.Selector, &rs.Spec.Template); err != nil {
			return err
		}
		ensureUID("ReplicaSet", rs)
		e.replicaSetPods(rs, &rs.Spec.Template, replicas(rs.Spec.Replicas))
	}
	return nil
}

// replicaSetPods creates the pods a ReplicaSet is missing: <rs>-<suffix>.
func (e *expander) replicaSetPods(rs *appsv1.ReplicaSet, tmpl *corev1.PodTemplateSpec, want int) {
	key := objectKey("ReplicaSet", rs.Namespace, rs.Name)
	missing := want - len(e.owned[key])
	if missing <= 0 {
		return
	}
	taken := map[string]bool{}
	for _, n := range e.owned[key] {
		taken[n] = true
	}
	ref := controllerRef("apps/v1", "ReplicaSet", rs.Name, rs)
	for _, sfx := range suffixes(key, missing+len(taken)) {
		name := rs.Name + "-" + sfx
		if taken[name] || missing == 0 {
			continue
		}
		e.out.Pending = append(e.out.Pending, e.newPod(tmpl, rs.Namespace, name, ref))
		missing--
	}
}

// statefulSets create the missing ordinals <sts>-<i>.
func (e *expander) statefulSets() error {
	for _, sts := range e.set.StatefulSets {
		if err := e.checkSelector("StatefulSet", sts, sts.Spec.Selector, &sts.Spec.Template); err != nil {
			return err
		}
		ensureUID("StatefulSet", sts)
		key := objectKey("StatefulSet", sts.Namespace, sts.Name)
		taken := map[string]bool{}
		for _, n := range e.owned[key] {
			taken[n] = true
		}
		start := 0
		if sts.Spec.Ordinals != nil {
			start = int(sts.Spec.Ordinals.Start)
		}
		revision := sts.Name + "-" + templateHash(sts.Spec.Template)
		ref := controllerRef("apps/v1", "StatefulSet", sts.Name, sts)
		for i := start; i < start+replicas(sts.Spec.Replicas); i++ {
			name := fmt.Sprintf("%s-%d", sts.Name, i)
			if taken[name] {
				continue
			}
			pod := e.newPod(&sts.Spec.Template, sts.Namespace, name, ref)
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[appsv1.StatefulSetPodNameLabel] = name
			pod.Labels[appsv1.PodIndexLabel] = fmt.Sprint(i)
			pod.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
			pod.Spec.Hostname = name
			pod.Spec.Subdomain = sts.Spec.ServiceName
			e.out.Pending = append(e.out.Pending, pod)
		}
	}
	return nil
}
