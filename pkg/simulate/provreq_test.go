package simulate

import (
	"strconv"
	"strings"
	"testing"
)

func request(name, class, template string, count int) string {
	return "---\napiVersion: autoscaling.x-k8s.io/v1\nkind: ProvisioningRequest\nmetadata: {name: " + name + ", namespace: default}\nspec:\n" +
		"  provisioningClassName: " + class + "\n  podSets: [{podTemplateRef: {name: " + template + "}, count: " + strconv.Itoa(count) + "}]\n"
}

func TestProvisioningRequests(t *testing.T) {
	const atomic, check = "best-effort-atomic-scale-up.autoscaling.x-k8s.io", "check-capacity.autoscaling.x-k8s.io"
	limited := bufferPool + "  limits: {cpu: \"8\"}\n"
	xlarge := onDemandPrice(t, "m5.xlarge", "us-east-1a")
	tests := map[string]struct {
		manifests     string
		wantFits      bool
		wantNodes     int     // NodeClaims an atomic request launches
		wantPrice     float64 // their $/hour
		wantMessage   string
		wantNoRequest bool
	}{
		// 6 pods of 1 cpu: two m5.xlarge (3 each in 3.92 cpu).
		"atomic fits: all its nodes": {manifests: bufferPool + shapeTemplate + request("train", atomic, "shape", 6),
			wantFits: true, wantNodes: 2, wantPrice: 2 * xlarge, wantMessage: "all 6 pods fit: 2 new node(s)"},
		// 9 pods need 3 m5.xlarge, 12 cpu, over the NodePool's 8: none.
		"atomic over a limit: nothing": {manifests: limited + shapeTemplate + request("train", atomic, "shape", 9),
			wantMessage: "[NodePoolLimit]"},
		// The existing m5.xlarge (3.92 cpu) holds 3 pods of 1 cpu, not 4;
		// check-capacity launches nothing.
		"check-capacity fits on an existing node": {manifests: bufferPool + "---\n" + existingNodeYAML + shapeTemplate + request("probe", check, "shape", 3),
			wantFits: true, wantMessage: "all 3 pods fit on the existing nodes"},
		"check-capacity does not": {manifests: bufferPool + "---\n" + existingNodeYAML + shapeTemplate + request("probe", check, "shape", 4),
			wantMessage: "1 of 4 pods do not fit"},
		// The pending web pods (2.5 cpu) take the existing node first: one
		// request pod of 1 cpu still fits there, two do not.
		"check-capacity after the pending pods": {manifests: bufferPool + "---\n" + existingNodeYAML + webDeployment + shapeTemplate + request("probe", check, "shape", 2),
			wantMessage: "1 of 2 pods do not fit"},
		"a missing PodTemplate": {manifests: bufferPool + request("train", atomic, "nowhere", 2),
			wantMessage: "PodTemplate default/nowhere not found"},
		"another class is left alone": {manifests: bufferPool + shapeTemplate + request("queued", "queued-provisioning.gke.io", "shape", 2),
			wantNoRequest: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rep := simulateFiles(t, writeManifest(t, tc.manifests))
			if tc.wantNoRequest {
				if len(rep.ProvisioningRequests) != 0 || !strings.Contains(strings.Join(rep.Warnings, "\n"), "is not one karp serves") {
					t.Errorf("requests %+v, warnings %q; want none answered and a warning", rep.ProvisioningRequests, rep.Warnings)
				}
				return
			}
			if len(rep.ProvisioningRequests) != 1 {
				t.Fatalf("requests %+v (warnings %q), want 1", rep.ProvisioningRequests, rep.Warnings)
			}
			r := rep.ProvisioningRequests[0]
			if r.Fits != tc.wantFits || len(r.NodeClaims) != tc.wantNodes || r.PricePerHour != roundCents(tc.wantPrice) {
				t.Errorf("fits %v, %d nodes, $%v/hour (%s); want %v, %d, $%v", r.Fits, len(r.NodeClaims), r.PricePerHour, r.Message,
					tc.wantFits, tc.wantNodes, roundCents(tc.wantPrice))
			}
			if !strings.Contains(r.Message, tc.wantMessage) {
				t.Errorf("message %q does not contain %q", r.Message, tc.wantMessage)
			}
			// A request's nodes are not the pending pods': not in the totals.
			for _, nc := range rep.NodeClaims {
				for _, p := range nc.Pods {
					if strings.HasPrefix(p, "default/train-") || strings.HasPrefix(p, "default/probe-") {
						t.Errorf("request pod %s counted among the pending pods", p)
					}
				}
			}
		})
	}
}

func TestProvisioningRequestGateOff(t *testing.T) {
	rep, err := Run(t.Context(), Options{Paths: []string{writeManifest(t, bufferPool+shapeTemplate+
		request("train", "best-effort-atomic-scale-up.autoscaling.x-k8s.io", "shape", 2))}, InstanceTypes: ec2Catalog(t), FeatureGates: gatesOf(t, "StaticCapacity=true")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.ProvisioningRequests) != 0 || !strings.Contains(strings.Join(rep.Warnings, "\n"), "ProvisioningRequest feature gate is off") {
		t.Errorf("requests %+v, warnings %q; want none answered, the gate named", rep.ProvisioningRequests, rep.Warnings)
	}
}
