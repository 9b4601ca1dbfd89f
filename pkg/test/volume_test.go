package test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestMakePersistentVolumeClaimClassIsUnsetOrExplicit(t *testing.T) {
	if got := MakePersistentVolumeClaim("a").Obj().Spec.StorageClassName; got != nil {
		t.Errorf("storageClassName = %q, want unset", *got)
	}
	got := MakePersistentVolumeClaim("a").StorageClass("").VolumeName("pv").Obj()
	if got.Spec.StorageClassName == nil || *got.Spec.StorageClassName != "" || got.Spec.VolumeName != "pv" {
		t.Errorf("storageClassName %v volumeName %q, want a pointer to \"\" and pv", got.Spec.StorageClassName, got.Spec.VolumeName)
	}
}

func TestPodClaimVolumesMountTheClaims(t *testing.T) {
	got := MakePod("p").ClaimVolumes("a", "b").Obj().Spec.Volumes
	if len(got) != 2 {
		t.Fatalf("%d volumes, want 2", len(got))
	}
	for i, want := range []string{"a", "b"} {
		if got[i].Name != want || got[i].PersistentVolumeClaim == nil || got[i].PersistentVolumeClaim.ClaimName != want {
			t.Errorf("volume %d = %+v, want %q mounting the claim %q", i, got[i], want, want)
		}
	}
}

func TestMakePersistentVolumeNodeAffinity(t *testing.T) {
	term := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		NodeSelectorRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "a")}}
	got := MakePersistentVolume("pv").NodeAffinity(term, term).Obj()
	if got.Spec.NodeAffinity == nil || len(got.Spec.NodeAffinity.Required.NodeSelectorTerms) != 2 {
		t.Errorf("node affinity %+v, want two required terms", got.Spec.NodeAffinity)
	}
}
