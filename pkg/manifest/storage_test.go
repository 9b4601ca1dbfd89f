package manifest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
)

// The objects CSI volume limits are read from: a node's CSINode, the
// claims, their volumes and classes. CSINodes, volumes and classes are
// cluster-scoped; a claim defaults to the default namespace.
func TestLoadReadsCSINodesAndClaims(t *testing.T) {
	dir := writeFiles(t, map[string]string{"storage.yaml": `apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: node-1}
spec:
  drivers:
    - {name: ebs.csi.aws.com, nodeID: i-0123, allocatable: {count: 25}, topologyKeys: [topology.ebs.csi.aws.com/zone]}
    - {name: efs.csi.aws.com, nodeID: i-0123}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  storageClassName: gp3
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 10Gi}}
  volumeName: pv-1
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-1}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0123}
`})
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Warnings) != 0 {
		t.Errorf("warnings = %q, want none", set.Warnings)
	}
	if len(set.CSINodes) != 1 {
		t.Fatalf("read %d CSINodes, want 1", len(set.CSINodes))
	}
	csiNode := set.CSINodes[0]
	if csiNode.Name != "node-1" || csiNode.Namespace != "" || len(csiNode.Spec.Drivers) != 2 {
		t.Fatalf("CSINode %s/%s with %d drivers, want node-1 (cluster-scoped) with 2", csiNode.Namespace, csiNode.Name, len(csiNode.Spec.Drivers))
	}
	if got := csiNode.Spec.Drivers[0].Allocatable; got == nil || !cmp.Equal(got.Count, ptr.To[int32](25)) {
		t.Errorf("ebs allocatable %v, want count 25", got)
	}
	if got := csiNode.Spec.Drivers[1].Allocatable; got != nil {
		t.Errorf("efs allocatable %v, want none", got)
	}
	if len(set.StorageClasses) != 1 || set.StorageClasses[0].Provisioner != "ebs.csi.aws.com" || set.StorageClasses[0].Namespace != "" {
		t.Errorf("StorageClasses %v, want gp3 provisioned by ebs.csi.aws.com", set.StorageClasses)
	}
	if len(set.Claims) != 1 || set.Claims[0].Namespace != "default" || set.Claims[0].Spec.VolumeName != "pv-1" {
		t.Errorf("claims %v, want default/data bound to pv-1", set.Claims)
	}
	if len(set.Volumes) != 1 || set.Volumes[0].Spec.CSI == nil || set.Volumes[0].Spec.CSI.Driver != "ebs.csi.aws.com" {
		t.Errorf("volumes %v, want pv-1 of ebs.csi.aws.com", set.Volumes)
	}
	if src, ok := set.SourceOf("CSINode node-1"); !ok || src.Doc != 1 || src.File != filepath.Join(dir, "storage.yaml") {
		t.Errorf("source of CSINode node-1 = %v, %v; want document 1 of storage.yaml", src, ok)
	}
}

// A CSINode is read strictly, as every built-in kind: a misspelt field
// names the object and the field.
func TestLoadRejectsAMisspeltCSINodeField(t *testing.T) {
	dir := writeFiles(t, map[string]string{"csinode.yaml": `apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: node-1}
spec:
  drivers:
    - {name: ebs.csi.aws.com, nodeID: i-0123, allocatable: {cuont: 25}}
`})
	_, err := Load(dir)
	for _, want := range []string{"csinode.yaml: document 1", "CSINode node-1", `unknown field "spec.drivers[0].allocatable.cuont"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}
