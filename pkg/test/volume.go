package test

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PersistentVolumeClaimWrapper builds a PersistentVolumeClaim:
// MakePersistentVolumeClaim("data").StorageClass("gp3").Obj().
type PersistentVolumeClaimWrapper struct{ corev1.PersistentVolumeClaim }

// MakePersistentVolumeClaim returns a 1Gi ReadWriteOnce claim in namespace
// "default", of no class (storageClassName unset) and bound to no volume.
func MakePersistentVolumeClaim(name string) *PersistentVolumeClaimWrapper {
	return &PersistentVolumeClaimWrapper{corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}}
}

// Obj returns a deep copy of the built claim.
func (w *PersistentVolumeClaimWrapper) Obj() *corev1.PersistentVolumeClaim {
	return w.PersistentVolumeClaim.DeepCopy()
}

// StorageClass sets storageClassName ("" is the explicit no-class value).
func (w *PersistentVolumeClaimWrapper) StorageClass(name string) *PersistentVolumeClaimWrapper {
	w.Spec.StorageClassName = &name
	return w
}

// VolumeName binds the claim to the named volume.
func (w *PersistentVolumeClaimWrapper) VolumeName(name string) *PersistentVolumeClaimWrapper {
	w.Spec.VolumeName = name
	return w
}

// PersistentVolumeWrapper builds a PersistentVolume:
// MakePersistentVolume("pv").Source(src).Obj().
type PersistentVolumeWrapper struct{ corev1.PersistentVolume }

// MakePersistentVolume returns a 1Gi ReadWriteOnce volume with no source
// and no node affinity.
func MakePersistentVolume(name string) *PersistentVolumeWrapper {
	return &PersistentVolumeWrapper{corev1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
	}}
}

// Obj returns a deep copy of the built volume.
func (w *PersistentVolumeWrapper) Obj() *corev1.PersistentVolume {
	return w.PersistentVolume.DeepCopy()
}

// Source sets the volume's source (CSI, NFS, an in-tree plugin...).
func (w *PersistentVolumeWrapper) Source(src corev1.PersistentVolumeSource) *PersistentVolumeWrapper {
	w.Spec.PersistentVolumeSource = src
	return w
}

// NodeAffinity sets the required node affinity to the terms (ORed).
func (w *PersistentVolumeWrapper) NodeAffinity(terms ...corev1.NodeSelectorTerm) *PersistentVolumeWrapper {
	w.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: terms}}
	return w
}
