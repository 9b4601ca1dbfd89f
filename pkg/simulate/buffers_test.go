package simulate

import (
	"strings"
	"testing"
)

// bufferPool offers m5.large (2 cpu) and m5.xlarge (4 cpu) on demand.
const bufferPool = defaultPool

const shapeTemplate = `---
apiVersion: v1
kind: PodTemplate
metadata: {name: shape, namespace: default}
template:
  spec:
    containers: [{name: c, image: i, resources: {requests: {cpu: "1", memory: 1Gi}}}]
`

// webDeployment is 5 pods of 500m cpu.
const webDeployment = `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 5
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: i, resources: {requests: {cpu: 500m, memory: 512Mi}}}]
`

func buffer(name, spec string) string {
	return "---\napiVersion: autoscaling.x-k8s.io/v1beta1\nkind: CapacityBuffer\nmetadata: {name: " + name + ", namespace: default}\nspec:\n" + spec
}

func TestCapacityBufferRoom(t *testing.T) {
	xlarge, large := onDemandPrice(t, "m5.xlarge", "us-east-1a"), onDemandPrice(t, "m5.large", "us-east-1a")
	tests := map[string]struct {
		manifests string
		// want per buffer: replicas, on new nodes, unplaced.
		wantBuffers map[string][3]int
		// wantRoomPrice is what the buffers add ($/hour).
		wantRoomPrice float64
		wantNodes     int
	}{
		// 5 × 500m fill an m5.xlarge (3.92 cpu) to 2.5; the 3 buffer pods
		// of 1 cpu take the 1.42 left for one and a second m5.xlarge for
		// the other two (3 cpu).
		"replicas from a PodTemplate": {
			manifests:   bufferPool + shapeTemplate + webDeployment + buffer("headroom", "  podTemplateRef: {name: shape}\n  replicas: 3\n"),
			wantBuffers: map[string][3]int{"default/headroom": {3, 3, 0}}, wantRoomPrice: xlarge, wantNodes: 2,
		},
		// 40% of the Deployment's 5 replicas is 2 pods of its shape
		// (500m): they fit in the room its own node has left.
		"percentage of a Deployment": {
			manifests:   bufferPool + webDeployment + buffer("web", "  scalableRef: {apiGroup: apps, kind: Deployment, name: web}\n  percentage: 40\n"),
			wantBuffers: map[string][3]int{"default/web": {2, 2, 0}}, wantRoomPrice: 0, wantNodes: 1,
		},
		// limits cpu 2500m hold 2 pods of 1 cpu: one fits in the 1.42 cpu
		// the web pods' m5.xlarge has left, the other needs an m5.large.
		"limits from a PodTemplate": {
			manifests:   bufferPool + shapeTemplate + webDeployment + buffer("capped", "  podTemplateRef: {name: shape}\n  limits: {cpu: 2500m}\n"),
			wantBuffers: map[string][3]int{"default/capped": {2, 2, 0}}, wantRoomPrice: large, wantNodes: 2,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rep := simulateFiles(t, writeManifest(t, tc.manifests))
			got := map[string][3]int{}
			for _, b := range rep.Buffers {
				got[b.Buffer] = [3]int{int(b.Replicas), b.OnNew, b.Unplaced}
			}
			if len(got) != len(tc.wantBuffers) {
				t.Fatalf("buffers %+v, want %v (warnings %q)", rep.Buffers, tc.wantBuffers, rep.Warnings)
			}
			for key, want := range tc.wantBuffers {
				if got[key] != want {
					t.Errorf("buffer %s: replicas, on new nodes, unplaced = %v, want %v", key, got[key], want)
				}
			}
			if rep.BufferPricePerHour != roundCents(tc.wantRoomPrice) {
				t.Errorf("buffer room $%v/hour, want $%v", rep.BufferPricePerHour, roundCents(tc.wantRoomPrice))
			}
			// Real pods are reported apart from the room.
			if rep.TotalNodes != tc.wantNodes || rep.TotalPods != 5 || rep.PendingPods != 5 || !rep.AllPlaced() {
				t.Errorf("%d nodes, %d of %d pods, unschedulable %+v; want %d nodes and the 5 web pods", rep.TotalNodes, rep.TotalPods,
					rep.PendingPods, rep.Unschedulable, tc.wantNodes)
			}
			for _, nc := range rep.NodeClaims {
				for _, p := range nc.Pods {
					if strings.Contains(p, "-buffer-") {
						t.Errorf("a buffer pod %s is listed among the real pods", p)
					}
				}
			}
		})
	}
}

// TestCapacityBufferKeepsRoomApart: a buffer that fits nowhere (its pod is
// too big) is reported, costs nothing, and leaves the exit status alone;
// the gate off ignores buffers, as the controller.
func TestCapacityBufferKeepsRoomApart(t *testing.T) {
	huge := strings.Replace(shapeTemplate, `cpu: "1"`, `cpu: "64"`, 1)
	rep := simulateFiles(t, writeManifest(t, bufferPool+huge+webDeployment+buffer("huge", "  podTemplateRef: {name: shape}\n  replicas: 2\n")))
	if len(rep.Buffers) != 1 || rep.Buffers[0].Unplaced != 2 || rep.Buffers[0].OnNew != 0 || !strings.Contains(rep.Buffers[0].Reason, "InstanceTypesTooSmall") {
		t.Errorf("buffers %+v, want 2 pods unplaced, too small", rep.Buffers)
	}
	if !rep.AllPlaced() || rep.TotalNodes != 1 || rep.BufferPricePerHour != 0 {
		t.Errorf("unschedulable %+v, %d nodes, room $%v; want the web pods placed on 1 node, no room cost", rep.Unschedulable, rep.TotalNodes, rep.BufferPricePerHour)
	}

	off, err := Run(t.Context(), Options{Paths: []string{writeManifest(t, bufferPool+shapeTemplate+webDeployment+
		buffer("headroom", "  podTemplateRef: {name: shape}\n  replicas: 3\n"))}, InstanceTypes: ec2Catalog(t), FeatureGates: gatesOf(t, "")})
	if err != nil {
		t.Fatal(err)
	}
	if len(off.Buffers) != 0 || off.TotalNodes != 1 || !strings.Contains(strings.Join(off.Warnings, "\n"), "CapacityBuffer feature gate is off") {
		t.Errorf("gate off: buffers %+v, %d nodes, warnings %q; want no room, 1 node, a warning", off.Buffers, off.TotalNodes, off.Warnings)
	}
}

func TestCapacityBufferNotResolved(t *testing.T) {
	rep := simulateFiles(t, writeManifest(t, bufferPool+webDeployment+buffer("orphan", "  podTemplateRef: {name: missing}\n  replicas: 3\n")))
	if len(rep.Buffers) != 0 || !strings.Contains(strings.Join(rep.Warnings, "\n"), "CapacityBuffer default/orphan: no room kept: PodTemplate default/missing not found (PodTemplateNotFound)") {
		t.Errorf("buffers %+v, warnings %q; want no room and the controller's reason", rep.Buffers, rep.Warnings)
	}
}
