package volumelimits_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
	"github.com/karp-autoscaler/karp/pkg/volumelimits"
)

var env *environment.Environment

func TestMain(m *testing.M) { environment.Main(m, &env) }

const (
	ns  = "default"
	ebs = "ebs.csi.aws.com"
)

func create(t *testing.T, ctx context.Context, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.WithoutCancel(ctx), obj) })
	}
}

func csiNode(name string, drivers ...storagev1.CSINodeDriver) *storagev1.CSINode {
	return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{Drivers: drivers}}
}

func driver(name string, count *int32) storagev1.CSINodeDriver {
	d := storagev1.CSINodeDriver{Name: name, NodeID: "i-0123"}
	if count != nil {
		d.Allocatable = &storagev1.VolumeNodeResources{Count: count}
	}
	return d
}

func claim(name, class, volume string) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if class != "" {
		pvc.Spec.StorageClassName = ptr.To(class)
	}
	return pvc
}

func volume(name string, src corev1.PersistentVolumeSource) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: src}}
}

// withClaims adds a volume per claim name; names prefixed "ephemeral:"
// become generic ephemeral volumes of the class gp3.
func withClaims(pod *corev1.Pod, claims ...string) *corev1.Pod {
	for _, c := range claims {
		if len(c) > len("ephemeral:") && c[:len("ephemeral:")] == "ephemeral:" {
			name := c[len("ephemeral:"):]
			pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
				Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("vl-gp3")}}}}})
			continue
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: c,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return pod
}

// TestFill reads limits and claims from a real API server: CSINodes with
// and without allocatable counts, claims bound to CSI and in-tree volumes,
// claims of CSI and in-tree classes, a generic ephemeral volume, and
// claims whose volume or class is gone.
func TestFill(t *testing.T) {
	ctx := t.Context()
	create(t, ctx,
		csiNode("vl-limited", driver(ebs, ptr.To[int32](25)), driver("efs.csi.aws.com", nil)),
		csiNode("vl-unlimited", driver(ebs, nil)),
		csiNode("vl-inflight", driver(ebs, ptr.To[int32](1))),
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "vl-gp3"}, Provisioner: ebs},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "vl-intree"}, Provisioner: "kubernetes.io/aws-ebs"},
		volume("vl-csi", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "other.csi.example.com", VolumeHandle: "h"}}),
		volume("vl-intree", corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}),
		volume("vl-nfs", corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}}),
		claim("bound-csi", "vl-gp3", "vl-csi"),
		claim("bound-intree", "", "vl-intree"),
		claim("bound-nfs", "vl-gp3", "vl-nfs"),
		claim("unbound-gp3", "vl-gp3", ""),
		claim("unbound-intree", "vl-intree", ""),
		claim("lost-volume", "vl-gp3", "vl-gone"),
		claim("lost-class", "vl-gone", ""),
		claim("no-class", "", ""),
	)
	pending := withClaims(test.MakePod("pending").Obj(), "unbound-gp3", "unbound-intree", "bound-nfs", "no-class")
	bound := withClaims(test.MakePod("bound").Obj(), "bound-csi", "bound-intree", "lost-volume", "lost-class", "missing")
	ephemeral := withClaims(test.MakePod("web-0").Obj(), "ephemeral:scratch")
	plain := test.MakePod("plain").Obj()
	in := &simulation.Input{Pods: []*corev1.Pod{pending},
		Nodes: []*simulation.Node{
			{Name: "vl-limited", Pods: []*corev1.Pod{bound, plain}},
			{Name: "vl-unlimited", Pods: []*corev1.Pod{ephemeral}},
			{Name: "vl-inflight", Requirements: scheduling.Requirements{}},
			{Name: "vl-no-csinode"},
		}}
	if err := volumelimits.Fill(ctx, env.Client, in); err != nil {
		t.Fatal(err)
	}
	wantLimits := map[string]scheduling.VolumeLimits{"vl-limited": {ebs: 25}}
	gotLimits := map[string]scheduling.VolumeLimits{}
	for _, n := range in.Nodes {
		if n.VolumeLimits != nil {
			gotLimits[n.Name] = n.VolumeLimits
		}
	}
	if diff := cmp.Diff(wantLimits, gotLimits); diff != "" {
		t.Errorf("node limits (-want,+got):\n%s", diff)
	}
	key := func(name string) string { return scheduling.ClaimKey(ns, name) }
	want := map[types.UID]scheduling.Volumes{
		// The class's CSI provisioner; an in-tree provisioner migrated;
		// a claim bound to an NFS volume and one without a class count
		// for no driver.
		pending.UID: {ebs: sets.New(key("unbound-gp3"), key("unbound-intree"))},
		// The volume's CSI driver; an in-tree EBS volume migrated; a
		// claim whose volume, class or self is gone counts for none.
		bound.UID: {"other.csi.example.com": sets.New(key("bound-csi")), ebs: sets.New(key("bound-intree"))},
		// A generic ephemeral volume whose claim is not created yet
		// counts with its template's class, under the claim's name.
		ephemeral.UID: {ebs: sets.New(key("web-0-scratch"))},
	}
	if diff := cmp.Diff(want, in.PodVolumes); diff != "" {
		t.Errorf("pod volumes (-want,+got):\n%s", diff)
	}
}

// Without any limited node, no claim is read: there is nothing to check.
func TestFillReadsNoClaimWithoutLimits(t *testing.T) {
	ctx := t.Context()
	create(t, ctx, csiNode("vl-plain", driver(ebs, nil)))
	in := &simulation.Input{Pods: []*corev1.Pod{withClaims(test.MakePod("p").Obj(), "does-not-exist")},
		Nodes: []*simulation.Node{{Name: "vl-plain"}}}
	if err := volumelimits.Fill(ctx, env.Client, in); err != nil {
		t.Fatal(err)
	}
	if in.PodVolumes != nil || in.Nodes[0].VolumeLimits != nil {
		t.Errorf("limits %v, pod volumes %v; want none", in.Nodes[0].VolumeLimits, in.PodVolumes)
	}
}
