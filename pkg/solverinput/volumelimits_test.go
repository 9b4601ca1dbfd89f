package solverinput_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/solverinput"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// ebs is the CSI driver the test volumes use (ns, "default", is defaultspread_test.go's).
const ebs = "ebs.csi.aws.com"

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

// TestFill reads limits and claims from a real API server: CSINodes with
// and without allocatable counts, claims bound to CSI and in-tree volumes,
// claims of CSI and in-tree classes, a generic ephemeral volume, and
// claims whose volume or class is gone.
func TestFill(t *testing.T) {
	ctx := t.Context()
	claim, volume := test.MakePersistentVolumeClaim, test.MakePersistentVolume
	env.Create(t,
		csiNode("vl-limited", driver(ebs, ptr.To[int32](25)), driver("efs.csi.aws.com", nil)),
		csiNode("vl-unlimited", driver(ebs, nil)),
		csiNode("vl-inflight", driver(ebs, ptr.To[int32](1))),
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "vl-gp3"}, Provisioner: ebs},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "vl-intree"}, Provisioner: "kubernetes.io/aws-ebs"},
		volume("vl-csi").Source(corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "other.csi.example.com", VolumeHandle: "h"}}).Obj(),
		volume("vl-intree").Source(corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}).Obj(),
		volume("vl-nfs").Source(corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}}).Obj(),
		claim("bound-csi").StorageClass("vl-gp3").VolumeName("vl-csi").Obj(),
		claim("bound-intree").VolumeName("vl-intree").Obj(),
		claim("bound-nfs").StorageClass("vl-gp3").VolumeName("vl-nfs").Obj(),
		claim("unbound-gp3").StorageClass("vl-gp3").Obj(),
		claim("unbound-intree").StorageClass("vl-intree").Obj(),
		claim("lost-volume").StorageClass("vl-gp3").VolumeName("vl-gone").Obj(),
		claim("lost-class").StorageClass("vl-gone").Obj(),
		claim("no-class").Obj(),
	)
	pending := test.MakePod("pending").ClaimVolumes("unbound-gp3", "unbound-intree", "bound-nfs", "no-class").Obj()
	bound := test.MakePod("bound").ClaimVolumes("bound-csi", "bound-intree", "lost-volume", "lost-class", "missing").Obj()
	// A generic ephemeral volume of the class vl-gp3.
	ephemeral := test.MakePod("web-0").Volume(corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{
		Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("vl-gp3")}}}}}).Obj()
	plain := test.MakePod("plain").Obj()
	in := &simulation.Input{Pods: []*corev1.Pod{pending},
		Nodes: []*simulation.Node{
			{Name: "vl-limited", Pods: []*corev1.Pod{bound, plain}},
			{Name: "vl-unlimited", Pods: []*corev1.Pod{ephemeral}},
			{Name: "vl-inflight", Requirements: scheduling.Requirements{}},
			{Name: "vl-no-csinode"},
		}}
	if err := solverinput.FillVolumeLimits(ctx, env.Client, in); err != nil {
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
	env.Create(t, csiNode("vl-plain", driver(ebs, nil)))
	in := &simulation.Input{Pods: []*corev1.Pod{test.MakePod("p").ClaimVolumes("does-not-exist").Obj()},
		Nodes: []*simulation.Node{{Name: "vl-plain"}}}
	if err := solverinput.FillVolumeLimits(ctx, env.Client, in); err != nil {
		t.Fatal(err)
	}
	if in.PodVolumes != nil || in.Nodes[0].VolumeLimits != nil {
		t.Errorf("limits %v, pod volumes %v; want none", in.Nodes[0].VolumeLimits, in.PodVolumes)
	}
}
