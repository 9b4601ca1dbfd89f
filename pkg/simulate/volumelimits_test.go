package simulate

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// volumeLimitsCluster is an existing m5.xlarge with room for every pod by
// CPU, whose CSINode allows count EBS volumes, one of them attached (a
// running pod's claim), and three pending pods: one on the attached
// claim, one without claims and one with a new claim of an EBS class.
func volumeLimitsCluster(count int) string {
	return defaultPool + "---\n" + existingNodeYAML + fmt.Sprintf(`---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: existing-1}
spec:
  drivers: [{name: ebs.csi.aws.com, nodeID: i-0123, allocatable: {count: %d}}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3}
provisioner: ebs.csi.aws.com
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-attached}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0123}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: attached, namespace: app}
spec:
  storageClassName: gp3
  volumeName: pv-attached
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: fresh, namespace: app}
spec:
  storageClassName: gp3
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: app}
spec:
  nodeName: existing-1
  containers: [{name: c, image: i, resources: {requests: {cpu: "1", memory: 1Gi}}}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: attached}}]
---
apiVersion: v1
kind: Pod
metadata: {name: shares-claim, namespace: app}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: 300m, memory: 1Gi}}}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: attached}}]
---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: app}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: 200m, memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: new-claim, namespace: app}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: 100m, memory: 1Gi}}}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: fresh}}]
`, count)
}

// An existing node's CSINode count holds in the simulation as in the
// controller: the pod whose claim the node cannot attach goes to a new
// NodeClaim, while pods on the attached claim or without claims stay on
// the node. With room for a second volume all three fit there.
func TestSimulateHonoursExistingNodesVolumeLimits(t *testing.T) {
	tests := map[string]struct {
		count         int
		wantExisting  []ExistingNodeSummary
		wantNewClaims [][]string
	}{
		"at its limit": {
			count:         1,
			wantExisting:  []ExistingNodeSummary{{Node: "existing-1", Pods: []string{"app/shares-claim", "app/plain"}}},
			wantNewClaims: [][]string{{"app/new-claim"}},
		},
		"room for one more": {
			count:         2,
			wantExisting:  []ExistingNodeSummary{{Node: "existing-1", Pods: []string{"app/shares-claim", "app/plain", "app/new-claim"}}},
			wantNewClaims: [][]string{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rep := simulateFiles(t, writeManifest(t, volumeLimitsCluster(tc.count)))
			if !rep.AllPlaced() || len(rep.Warnings) != 0 {
				t.Errorf("unschedulable %v, warnings %q; want every pod placed, no warning", rep.Unschedulable, rep.Warnings)
			}
			if diff := cmp.Diff(tc.wantExisting, rep.ExistingNodes); diff != "" {
				t.Errorf("pods on existing nodes (-want,+got):\n%s", diff)
			}
			gotNewClaims := [][]string{}
			for _, nc := range rep.NodeClaims {
				gotNewClaims = append(gotNewClaims, nc.Pods)
			}
			if diff := cmp.Diff(tc.wantNewClaims, gotNewClaims); diff != "" {
				t.Errorf("pods on new NodeClaims (-want,+got):\n%s", diff)
			}
		})
	}
}

// A CSINode of a node that is not among the manifests limits nothing and
// is named in a warning, as a pod bound to such a node is.
func TestSimulateWarnsAboutACSINodeWithoutItsNode(t *testing.T) {
	path := writeManifest(t, volumeLimitsCluster(1)+`---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: gone}
spec:
  drivers: [{name: ebs.csi.aws.com, nodeID: i-0456, allocatable: {count: 0}}]
`)
	rep := simulateFiles(t, path)
	want := []string{`CSINode gone: node "gone" is not among the manifests; ignored`}
	if diff := cmp.Diff(want, rep.Warnings); diff != "" {
		t.Errorf("warnings (-want,+got):\n%s", diff)
	}
	if len(rep.NodeClaims) != 1 || !rep.AllPlaced() {
		t.Errorf("%d new NodeClaims, unschedulable %v; want 1 and every pod placed", len(rep.NodeClaims), rep.Unschedulable)
	}
}
