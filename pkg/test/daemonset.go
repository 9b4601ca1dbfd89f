package test

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DaemonSetWrapper builds a DaemonSet: MakeDaemonSet("d").Requests("cpu", "100m").Obj().
type DaemonSetWrapper struct{ appsv1.DaemonSet }

// MakeDaemonSet returns a DaemonSet in namespace "default" whose pod
// template has one container "agent" requesting nothing.
func MakeDaemonSet(name string) *DaemonSetWrapper {
	labels := map[string]string{"app": name}
	return &DaemonSetWrapper{appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}}
}

// Obj returns a deep copy of the built DaemonSet.
func (w *DaemonSetWrapper) Obj() *appsv1.DaemonSet { return w.DaemonSet.DeepCopy() }

// Namespace sets the namespace.
func (w *DaemonSetWrapper) Namespace(ns string) *DaemonSetWrapper {
	w.ObjectMeta.Namespace = ns
	return w
}

// Requests sets the container's requests from name/quantity pairs.
func (w *DaemonSetWrapper) Requests(pairs ...string) *DaemonSetWrapper {
	w.Spec.Template.Spec.Containers[0].Resources.Requests = ResourceList(pairs...)
	return w
}

// Limits sets the container's limits from name/quantity pairs.
func (w *DaemonSetWrapper) Limits(pairs ...string) *DaemonSetWrapper {
	w.Spec.Template.Spec.Containers[0].Resources.Limits = ResourceList(pairs...)
	return w
}

// NodeSelector replaces the template's node selector.
func (w *DaemonSetWrapper) NodeSelector(sel map[string]string) *DaemonSetWrapper {
	w.Spec.Template.Spec.NodeSelector = sel
	return w
}

// NodeAffinityTerm appends one ORed required node selector term.
func (w *DaemonSetWrapper) NodeAffinityTerm(reqs ...corev1.NodeSelectorRequirement) *DaemonSetWrapper {
	spec := &w.Spec.Template.Spec
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}
	}
	ns := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: reqs})
	return w
}

// Toleration appends a toleration.
func (w *DaemonSetWrapper) Toleration(t corev1.Toleration) *DaemonSetWrapper {
	w.Spec.Template.Spec.Tolerations = append(w.Spec.Template.Spec.Tolerations, t)
	return w
}

// HostPort adds a TCP host port to the container.
func (w *DaemonSetWrapper) HostPort(port int32) *DaemonSetWrapper {
	c := &w.Spec.Template.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP})
	return w
}

// Pod returns the DaemonSet's pod for node: the template, owned by the
// DaemonSet, bound to node.
func (w *DaemonSetWrapper) Pod(node string) *corev1.Pod {
	ds := w.Obj()
	pod := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
	pod.Name = ds.Name + "-" + node
	pod.Namespace = ds.Namespace
	pod.UID = types.UID("uid-" + pod.Name)
	pod.Spec.NodeName = node
	pod.Status.Phase = corev1.PodRunning
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID}}
	return pod
}
