package provisioning_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/karp-autoscaler/karp/pkg/test"
)

func withClaim(pod *corev1.Pod, claim string) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data",
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return pod
}

func TestVolumeTopologyNarrowsTheZone(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "zonal"}, Provisioner: "example.com/csi",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: []string{"test-zone-2"}}}}}}
	h.create(sc)
	t.Cleanup(func() { _ = env.Client.Delete(h.ctx, sc) })
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("zonal"),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	h.create(pvc)
	t.Cleanup(func() { _ = env.Client.Delete(h.ctx, pvc) })

	h.pendingPods(withClaim(test.MakePod("with-volume").Requests("cpu", "1").Obj(), "data"))
	missing := h.pendingPods(withClaim(test.MakePod("missing-volume").Requests("cpu", "1").Obj(), "nope"))

	res := h.schedule()
	if len(res.Created) != 1 {
		t.Fatalf("created %v, want one NodeClaim for the pod whose claim exists", res.Created)
	}
	zone := requirement(h.nodeClaims()[0], corev1.LabelTopologyZone)
	if zone == nil || zone.Operator != corev1.NodeSelectorOpIn || len(zone.Values) != 1 || zone.Values[0] != "test-zone-2" {
		t.Errorf("zone requirement = %+v, want In [test-zone-2] from the StorageClass", zone)
	}
	if got := h.eventFor(missing[0], "FailedScheduling"); !contains(got, "nope") {
		t.Errorf("FailedScheduling event %q does not name the missing claim", got)
	}
}
