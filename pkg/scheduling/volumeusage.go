package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Volumes are the persistent volume claims some pods use, by the CSI driver
// that attaches them: driver name -> claim keys ("namespace/name"). A claim
// two pods share counts once, as on the node, where it is attached once.
type Volumes map[string]sets.Set[string]

// Add records that the claim is attached by the driver.
func (v Volumes) Add(driver, claim string) {
	s, ok := v[driver]
	if !ok {
		s = sets.New[string]()
		v[driver] = s
	}
	s.Insert(claim)
}

// Insert adds every claim of o to v; v never shares a set with o.
func (v Volumes) Insert(o Volumes) {
	for driver, claims := range o {
		for claim := range claims {
			v.Add(driver, claim)
		}
	}
}

// VolumeLimits are how many volumes of each CSI driver a node can attach
// (its CSINode's spec.drivers[].allocatable.count). A driver without an
// entry is not limited.
type VolumeLimits map[string]int

// CSINodeLimits reads the attach limits a CSINode reports. Drivers that
// report no allocatable count are not limited.
func CSINodeLimits(csiNode *storagev1.CSINode) VolumeLimits {
	var out VolumeLimits
	for _, d := range csiNode.Spec.Drivers {
		if d.Allocatable == nil || d.Allocatable.Count == nil {
			continue
		}
		if out == nil {
			out = VolumeLimits{}
		}
		out[d.Name] = int(*d.Allocatable.Count)
	}
	return out
}

// ExceededBy reports whether attaching add to a node that already has used
// takes some driver over its limit, and which. Like kube-scheduler's
// NodeVolumeLimits, only drivers add brings a new claim to are checked: a
// pod whose claims are all attached already, or that uses no limited
// driver, always fits. (Upstream Karpenter checks every driver of the
// union, so a node already over one driver's limit refuses even pods that
// attach nothing of that driver, which kube-scheduler would bind.) It
// allocates nothing: the solver asks it for every node a pod with claims
// could go to.
func (l VolumeLimits) ExceededBy(used, add Volumes) (string, bool) {
	for driver, claims := range add {
		limit, limited := l[driver]
		if !limited {
			continue
		}
		have := used[driver]
		count := have.Len()
		for claim := range claims {
			if !have.Has(claim) {
				count++
			}
		}
		if count > have.Len() && count > limit {
			return driver, true
		}
	}
	return "", false
}

// ClaimKey is how Volumes names a claim.
func ClaimKey(namespace, name string) string { return namespace + "/" + name }

// ClaimDriver names the CSI driver that attaches a claim's volume, or ""
// when none is known (the claim is then not counted against any limit, as
// upstream). A bound claim is attached by its PersistentVolume's driver
// (pv nil: the volume is gone); an unbound one will be provisioned by its
// StorageClass's provisioner (sc nil: no class, or it is gone). In-tree
// plugin names are translated to the CSI drivers they migrated to.
func ClaimDriver(pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, sc *storagev1.StorageClass) string {
	if pvc.Spec.VolumeName != "" {
		// Bound to a volume no CSI driver attaches (NFS, a local volume):
		// no limit applies, whatever the class says.
		if pv == nil {
			return ""
		}
		return PersistentVolumeDriver(pv)
	}
	if sc == nil {
		return ""
	}
	return MigratedDriver(sc.Provisioner)
}

// PersistentVolumeDriver names the CSI driver that attaches the volume: its
// spec.csi.driver, or for an in-tree source the CSI driver that plugin
// migrated to; "" for other volumes.
func PersistentVolumeDriver(pv *corev1.PersistentVolume) string {
	src := &pv.Spec.PersistentVolumeSource
	switch {
	case src.CSI != nil:
		return src.CSI.Driver
	case src.AWSElasticBlockStore != nil:
		return inTreeDrivers["kubernetes.io/aws-ebs"]
	case src.GCEPersistentDisk != nil:
		return inTreeDrivers["kubernetes.io/gce-pd"]
	case src.AzureDisk != nil:
		return inTreeDrivers["kubernetes.io/azure-disk"]
	case src.AzureFile != nil:
		return inTreeDrivers["kubernetes.io/azure-file"]
	case src.Cinder != nil:
		return inTreeDrivers["kubernetes.io/cinder"]
	case src.VsphereVolume != nil:
		return inTreeDrivers["kubernetes.io/vsphere-volume"]
	case src.PortworxVolume != nil:
		return inTreeDrivers["kubernetes.io/portworx-volume"]
	}
	return ""
}

// MigratedDriver is the CSI driver behind a StorageClass provisioner: an
// in-tree plugin name becomes the CSI driver it migrated to (CSI migration
// is GA for every one of them, so the node's CSINode reports the limit
// under the CSI name); any other name is the CSI driver itself.
func MigratedDriver(provisioner string) string {
	if d, ok := inTreeDrivers[provisioner]; ok {
		return d
	}
	return provisioner
}

// inTreeDrivers maps in-tree volume plugins to the CSI drivers that
// replaced them (the names of k8s.io/csi-translation-lib).
var inTreeDrivers = map[string]string{
	"kubernetes.io/aws-ebs":         "ebs.csi.aws.com",
	"kubernetes.io/gce-pd":          "pd.csi.storage.gke.io",
	"kubernetes.io/azure-disk":      "disk.csi.azure.com",
	"kubernetes.io/azure-file":      "file.csi.azure.com",
	"kubernetes.io/cinder":          "cinder.csi.openstack.org",
	"kubernetes.io/vsphere-volume":  "csi.vsphere.vmware.com",
	"kubernetes.io/portworx-volume": "pxd.portworx.com",
}
