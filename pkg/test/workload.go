package test

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// DeploymentWrapper builds a Deployment: MakeDeployment("web").Replicas(4).Obj().
type DeploymentWrapper struct{ appsv1.Deployment }

// MakeDeployment returns a Deployment in namespace "default" of one
// replica whose pods are labelled app=<name>, with the default
// RollingUpdate strategy (the API server sets maxUnavailable 25%). No
// Deployment controller runs in controller tests: create its ReplicaSet
// (ReplicaSetOf) and pods (ControlledBy) yourself.
func MakeDeployment(name string) *DeploymentWrapper {
	labels := map[string]string{"app": name}
	return &DeploymentWrapper{appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: workloadTemplate(labels)},
	}}
}

// Obj returns a deep copy of the built Deployment.
func (w *DeploymentWrapper) Obj() *appsv1.Deployment { return w.Deployment.DeepCopy() }

// Replicas sets spec.replicas.
func (w *DeploymentWrapper) Replicas(n int32) *DeploymentWrapper {
	w.Spec.Replicas = &n
	return w
}

// MaxUnavailable sets the RollingUpdate strategy's maxUnavailable ("2",
// "50%").
func (w *DeploymentWrapper) MaxUnavailable(v string) *DeploymentWrapper {
	mu := intstr.Parse(v)
	w.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &mu}}
	return w
}

// Recreate sets the Recreate strategy.
func (w *DeploymentWrapper) Recreate() *DeploymentWrapper {
	w.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return w
}

// ReplicaSetOf returns the ReplicaSet the Deployment controller makes for
// d (which must have its UID, i.e. be created): named <d>-<hash>, its pods
// labelled pod-template-hash=<hash>, controlled by d, with d's replicas.
func ReplicaSetOf(d *appsv1.Deployment, hash string) *appsv1.ReplicaSet {
	labels := map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash}
	for k, v := range d.Spec.Template.Labels {
		labels[k] = v
	}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{controllerRef("Deployment", d)}},
		Spec: appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: workloadTemplate(labels)},
	}
}

// StatefulSetWrapper builds a StatefulSet: MakeStatefulSet("db").Replicas(3).Obj().
type StatefulSetWrapper struct{ appsv1.StatefulSet }

// MakeStatefulSet returns a StatefulSet in namespace "default" of one
// replica whose pods are labelled app=<name> (the API server defaults its
// update strategy to RollingUpdate without maxUnavailable: 1).
func MakeStatefulSet(name string) *StatefulSetWrapper {
	labels := map[string]string{"app": name}
	return &StatefulSetWrapper{appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), ServiceName: name, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: workloadTemplate(labels)},
	}}
}

// Obj returns a deep copy of the built StatefulSet.
func (w *StatefulSetWrapper) Obj() *appsv1.StatefulSet { return w.StatefulSet.DeepCopy() }

// Replicas sets spec.replicas.
func (w *StatefulSetWrapper) Replicas(n int32) *StatefulSetWrapper {
	w.Spec.Replicas = &n
	return w
}

// MaxUnavailable sets the RollingUpdate strategy's maxUnavailable.
func (w *StatefulSetWrapper) MaxUnavailable(v string) *StatefulSetWrapper {
	mu := intstr.Parse(v)
	w.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: &mu}}
	return w
}

// ControlledBy makes pod one of owner's (a created ReplicaSet or
// StatefulSet): owner's template labels and a controller reference to it.
func ControlledBy(pod *corev1.Pod, owner metav1.Object, kind string, templateLabels map[string]string) {
	pod.Labels = map[string]string{}
	for k, v := range templateLabels {
		pod.Labels[k] = v
	}
	pod.OwnerReferences = []metav1.OwnerReference{controllerRef(kind, owner)}
}

func controllerRef(kind string, owner metav1.Object) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: owner.GetName(), UID: owner.GetUID(),
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

func workloadTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}}
}
