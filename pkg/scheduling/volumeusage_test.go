package scheduling

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

func TestClaimDriver(t *testing.T) {
	bound := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1", StorageClassName: ptr.To("gp3")}}
	unbound := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("gp3")}}
	pv := func(src corev1.PersistentVolumeSource) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: src}}
	}
	class := func(provisioner string) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3"}, Provisioner: provisioner}
	}
	cases := map[string]struct {
		pvc  *corev1.PersistentVolumeClaim
		pv   *corev1.PersistentVolume
		sc   *storagev1.StorageClass
		want string
	}{
		"bound to a CSI volume: its driver, whatever the class": {pvc: bound,
			pv: pv(corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com"}}),
			sc: class("other.csi.example.com"), want: "ebs.csi.aws.com"},
		"bound to an in-tree EBS volume: migrated to the EBS CSI driver": {pvc: bound,
			pv: pv(corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol-1"}}), want: "ebs.csi.aws.com"},
		"bound to an in-tree GCE PD volume": {pvc: bound,
			pv: pv(corev1.PersistentVolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "pd"}}), want: "pd.csi.storage.gke.io"},
		"bound to an in-tree Azure disk": {pvc: bound,
			pv: pv(corev1.PersistentVolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d"}}), want: "disk.csi.azure.com"},
		"bound to an NFS volume: no CSI driver, the class does not count": {pvc: bound,
			pv: pv(corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}}), sc: class("ebs.csi.aws.com")},
		"bound to a volume that is gone":                 {pvc: bound, sc: class("ebs.csi.aws.com")},
		"unbound: the class's CSI provisioner":           {pvc: unbound, sc: class("ebs.csi.aws.com"), want: "ebs.csi.aws.com"},
		"unbound, in-tree aws-ebs provisioner: migrated": {pvc: unbound, sc: class("kubernetes.io/aws-ebs"), want: "ebs.csi.aws.com"},
		"unbound, in-tree gce-pd provisioner: migrated":  {pvc: unbound, sc: class("kubernetes.io/gce-pd"), want: "pd.csi.storage.gke.io"},
		"unbound, in-tree cinder provisioner: migrated":  {pvc: unbound, sc: class("kubernetes.io/cinder"), want: "cinder.csi.openstack.org"},
		"unbound, no class":                              {pvc: unbound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ClaimDriver(tc.pvc, tc.pv, tc.sc); got != tc.want {
				t.Errorf("ClaimDriver = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCSINodeLimits(t *testing.T) {
	csiNode := &storagev1.CSINode{Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "ebs.csi.aws.com", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](25)}},
		{Name: "efs.csi.aws.com"},
		{Name: "other.csi.example.com", Allocatable: &storagev1.VolumeNodeResources{}},
		{Name: "zero.csi.example.com", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](0)}},
	}}}
	want := VolumeLimits{"ebs.csi.aws.com": 25, "zero.csi.example.com": 0}
	if diff := cmp.Diff(want, CSINodeLimits(csiNode)); diff != "" {
		t.Errorf("CSINodeLimits (-want,+got):\n%s", diff)
	}
	if got := CSINodeLimits(&storagev1.CSINode{}); got != nil {
		t.Errorf("a CSINode without drivers has limits %v, want none", got)
	}
}

func TestVolumeLimitsExceededBy(t *testing.T) {
	vols := func(driver string, claims ...string) Volumes {
		v := Volumes{}
		for _, c := range claims {
			v.Add(driver, c)
		}
		return v
	}
	limits := VolumeLimits{"ebs": 2}
	cases := map[string]struct {
		used, add Volumes
		want      string // the driver over its limit, "" when it fits
	}{
		"room for one more":                      {used: vols("ebs", "a"), add: vols("ebs", "b")},
		"at the limit: a new claim does not fit": {used: vols("ebs", "a", "b"), add: vols("ebs", "c"), want: "ebs"},
		"two new claims, room for one":           {used: vols("ebs", "a"), add: vols("ebs", "b", "c"), want: "ebs"},
		"at the limit: a claim already attached": {used: vols("ebs", "a", "b"), add: vols("ebs", "b")},
		"over the limit, nothing new attached":   {used: vols("ebs", "a", "b", "c"), add: vols("ebs", "a")},
		"another driver is not limited":          {used: vols("ebs", "a", "b"), add: vols("efs", "x", "y", "z")},
		"a node over one driver's limit takes other drivers' claims": {
			used: vols("ebs", "a", "b", "c"), add: vols("efs", "x")},
		"nothing to add": {used: vols("ebs", "a", "b", "c")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			driver, exceeded := limits.ExceededBy(tc.used, tc.add)
			if exceeded != (tc.want != "") || driver != tc.want {
				t.Errorf("ExceededBy = %q, %v; want %q", driver, exceeded, tc.want)
			}
		})
	}
}

func TestVolumesInsertCopies(t *testing.T) {
	pod := Volumes{}
	pod.Add("ebs", "ns/a")
	node := Volumes{}
	node.Insert(pod)
	node.Add("ebs", "ns/b")
	node.Insert(pod) // a claim two pods share counts once
	if diff := cmp.Diff(Volumes{"ebs": sets.New("ns/a")}, pod); diff != "" {
		t.Errorf("the inserted volumes changed (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(Volumes{"ebs": sets.New("ns/a", "ns/b")}, node); diff != "" {
		t.Errorf("node volumes (-want,+got):\n%s", diff)
	}
}
