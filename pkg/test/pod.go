package test

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ResourceList builds a resource list from name/quantity pairs:
// ResourceList("cpu", "1", "memory", "2Gi"). It panics on an odd count or
// a bad quantity, which only happens in a broken test.
func ResourceList(pairs ...string) corev1.ResourceList {
	if len(pairs)%2 != 0 {
		panic(fmt.Sprintf("ResourceList: odd number of arguments %v", pairs))
	}
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// PodWrapper builds a Pod: MakePod("a").Requests("cpu", "1").Obj().
// Setters replace the field they name; appenders (Toleration, Spread,
// PodAffinity...) add one entry.
type PodWrapper struct{ corev1.Pod }

// MakePod returns a pending, unschedulable pod in namespace "default" with
// one container "app" that requests nothing, and a UID derived from the name.
func MakePod(name string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}},
	}}
}

// Obj returns a deep copy of the built pod.
func (w *PodWrapper) Obj() *corev1.Pod { return w.Pod.DeepCopy() }

// Namespace sets the namespace.
func (w *PodWrapper) Namespace(ns string) *PodWrapper { w.ObjectMeta.Namespace = ns; return w }

// UID sets the UID.
func (w *PodWrapper) UID(uid string) *PodWrapper { w.ObjectMeta.UID = types.UID(uid); return w }

// Labels replaces the labels.
func (w *PodWrapper) Labels(labels map[string]string) *PodWrapper {
	w.ObjectMeta.Labels = labels
	return w
}

// Label sets one label.
func (w *PodWrapper) Label(key, value string) *PodWrapper {
	if w.ObjectMeta.Labels == nil {
		w.ObjectMeta.Labels = map[string]string{}
	}
	w.ObjectMeta.Labels[key] = value
	return w
}

// Annotation sets one annotation.
func (w *PodWrapper) Annotation(key, value string) *PodWrapper {
	if w.ObjectMeta.Annotations == nil {
		w.ObjectMeta.Annotations = map[string]string{}
	}
	w.ObjectMeta.Annotations[key] = value
	return w
}

// Created sets the creation timestamp.
func (w *PodWrapper) Created(t time.Time) *PodWrapper {
	w.ObjectMeta.CreationTimestamp = metav1.NewTime(t)
	return w
}

// Terminating sets a deletion timestamp.
func (w *PodWrapper) Terminating(t time.Time) *PodWrapper {
	ts := metav1.NewTime(t)
	w.ObjectMeta.DeletionTimestamp = &ts
	return w
}

// Owner adds an owner reference.
func (w *PodWrapper) Owner(kind, name, uid string) *PodWrapper {
	w.ObjectMeta.OwnerReferences = append(w.ObjectMeta.OwnerReferences, metav1.OwnerReference{
		APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid)})
	return w
}

// Requests sets the first container's requests from name/quantity pairs.
func (w *PodWrapper) Requests(pairs ...string) *PodWrapper {
	w.Spec.Containers[0].Resources.Requests = ResourceList(pairs...)
	return w
}

// Limits sets the first container's limits from name/quantity pairs.
func (w *PodWrapper) Limits(pairs ...string) *PodWrapper {
	w.Spec.Containers[0].Resources.Limits = ResourceList(pairs...)
	return w
}

// Container appends a container with the given requests.
func (w *PodWrapper) Container(name string, requests corev1.ResourceList) *PodWrapper {
	w.Spec.Containers = append(w.Spec.Containers, corev1.Container{Name: name, Image: "registry.k8s.io/pause:3.10",
		Resources: corev1.ResourceRequirements{Requests: requests}})
	return w
}

// InitContainer appends an init container; sidecar makes it restartable
// (restartPolicy Always).
func (w *PodWrapper) InitContainer(name string, requests corev1.ResourceList, sidecar bool) *PodWrapper {
	c := corev1.Container{Name: name, Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: requests}}
	if sidecar {
		always := corev1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	w.Spec.InitContainers = append(w.Spec.InitContainers, c)
	return w
}

// Overhead sets spec.overhead.
func (w *PodWrapper) Overhead(pairs ...string) *PodWrapper {
	w.Spec.Overhead = ResourceList(pairs...)
	return w
}

// NodeSelector replaces the node selector.
func (w *PodWrapper) NodeSelector(sel map[string]string) *PodWrapper {
	w.Spec.NodeSelector = sel
	return w
}

// NodeName binds the pod.
func (w *PodWrapper) NodeName(name string) *PodWrapper { w.Spec.NodeName = name; return w }

// Phase sets status.phase.
func (w *PodWrapper) Phase(p corev1.PodPhase) *PodWrapper { w.Status.Phase = p; return w }

func (w *PodWrapper) affinity() *corev1.Affinity {
	if w.Spec.Affinity == nil {
		w.Spec.Affinity = &corev1.Affinity{}
	}
	return w.Spec.Affinity
}

// NodeAffinityTerm appends one ORed required node selector term.
func (w *PodWrapper) NodeAffinityTerm(reqs ...corev1.NodeSelectorRequirement) *PodWrapper {
	a := w.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	if a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	ns := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: reqs})
	return w
}

// NodeAffinityFieldTerm appends one ORed required node selector term
// made of matchFields (which can only name a node: metadata.name).
func (w *PodWrapper) NodeAffinityFieldTerm(fields ...corev1.NodeSelectorRequirement) *PodWrapper {
	w.NodeAffinityTerm()
	ns := w.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	ns.NodeSelectorTerms[len(ns.NodeSelectorTerms)-1] = corev1.NodeSelectorTerm{MatchFields: fields}
	return w
}

// PreferredNodeAffinity appends a weighted preferred node selector term.
func (w *PodWrapper) PreferredNodeAffinity(weight int32, reqs ...corev1.NodeSelectorRequirement) *PodWrapper {
	a := w.affinity()
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: reqs}})
	return w
}

// NodeSelectorRequirement is shorthand for a node selector expression.
func NodeSelectorRequirement(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// Toleration appends a toleration.
func (w *PodWrapper) Toleration(t corev1.Toleration) *PodWrapper {
	w.Spec.Tolerations = append(w.Spec.Tolerations, t)
	return w
}

// Spread appends a topology spread constraint selecting matchLabels.
func (w *PodWrapper) Spread(key string, maxSkew int32, when corev1.UnsatisfiableConstraintAction, matchLabels map[string]string) *PodWrapper {
	w.Spec.TopologySpreadConstraints = append(w.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: &metav1.LabelSelector{MatchLabels: matchLabels}})
	return w
}

// SpreadConstraint appends a fully specified topology spread constraint.
func (w *PodWrapper) SpreadConstraint(tsc corev1.TopologySpreadConstraint) *PodWrapper {
	w.Spec.TopologySpreadConstraints = append(w.Spec.TopologySpreadConstraints, tsc)
	return w
}

func term(key string, matchLabels map[string]string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: matchLabels}}
}

// PodAffinity appends a required pod affinity term.
func (w *PodWrapper) PodAffinity(key string, matchLabels map[string]string) *PodWrapper {
	a := w.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(key, matchLabels))
	return w
}

// PodAffinityTerm appends a fully specified required pod affinity term.
func (w *PodWrapper) PodAffinityTerm(t corev1.PodAffinityTerm) *PodWrapper {
	a := w.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t)
	return w
}

// PreferredPodAffinity appends a weighted preferred pod affinity term.
func (w *PodWrapper) PreferredPodAffinity(weight int32, key string, matchLabels map[string]string) *PodWrapper {
	a := w.affinity()
	if a.PodAffinity == nil {
		a.PodAffinity = &corev1.PodAffinity{}
	}
	a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(key, matchLabels)})
	return w
}

// PodAntiAffinity appends a required pod anti-affinity term.
func (w *PodWrapper) PodAntiAffinity(key string, matchLabels map[string]string) *PodWrapper {
	a := w.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, term(key, matchLabels))
	return w
}

// PreferredPodAntiAffinity appends a weighted preferred anti-affinity term.
func (w *PodWrapper) PreferredPodAntiAffinity(weight int32, key string, matchLabels map[string]string) *PodWrapper {
	a := w.affinity()
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(key, matchLabels)})
	return w
}

// HostPort adds a TCP host port to the first container.
func (w *PodWrapper) HostPort(port int32) *PodWrapper {
	w.Spec.Containers[0].Ports = append(w.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP})
	return w
}

// Volume appends a volume.
func (w *PodWrapper) Volume(v corev1.Volume) *PodWrapper {
	w.Spec.Volumes = append(w.Spec.Volumes, v)
	return w
}

// ClaimVolumes appends, per claim, a volume of that name mounting the
// PersistentVolumeClaim.
func (w *PodWrapper) ClaimVolumes(claims ...string) *PodWrapper {
	for _, c := range claims {
		w.Volume(corev1.Volume{Name: c,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return w
}
