package simulate

import (
	"strings"
	"testing"
)

const overlayPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large, m5.large]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`

const onePod = `---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: 1500m, memory: 512Mi}}}]
`

const widgetPod = `---
apiVersion: v1
kind: Pod
metadata: {name: w, namespace: default}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: 100m, example.com/widget: "2"}, limits: {example.com/widget: "2"}}}]
`

func TestSimulateAppliesNodeOverlays(t *testing.T) {
	c5Up := `---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: c5-up}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}]
  priceAdjustment: "+1"
`
	widgets := `---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: widgets}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}]
  capacity: {example.com/widget: "4"}
`
	conflicting := `---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: also-c5}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}]
  price: "0.001"
`
	tests := map[string]struct {
		manifests       string
		wantType        string // the one NodeClaim's type; "" when the pod stays pending
		wantWarningPart string
	}{
		"no overlay: the cheaper c5.large":          {manifests: overlayPool + onePod, wantType: "c5.large"},
		"c5.large made expensive: m5.large":         {manifests: overlayPool + onePod + c5Up, wantType: "m5.large"},
		"widgets nobody offers":                     {manifests: overlayPool + widgetPod},
		"widgets from an overlay":                   {manifests: overlayPool + widgetPod + widgets, wantType: "m5.large"},
		"a conflicting overlay is left out, warned": {manifests: overlayPool + onePod + c5Up + conflicting, wantType: "m5.large", wantWarningPart: "NodeOverlay also-c5: not applied: conflicts with NodeOverlay c5-up"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rep := simulateFiles(t, writeManifest(t, tc.manifests))
			switch {
			case tc.wantType == "" && (len(rep.NodeClaims) != 0 || len(rep.Unschedulable) != 1):
				t.Errorf("NodeClaims %+v, unschedulable %+v; want the pod pending", rep.NodeClaims, rep.Unschedulable)
			case tc.wantType != "" && (len(rep.NodeClaims) != 1 || rep.NodeClaims[0].InstanceType != tc.wantType):
				t.Errorf("NodeClaims %+v (unschedulable %+v), want one %s", rep.NodeClaims, rep.Unschedulable, tc.wantType)
			}
			if tc.wantWarningPart != "" && !strings.Contains(strings.Join(rep.Warnings, "\n"), tc.wantWarningPart) {
				t.Errorf("warnings %q do not contain %q", rep.Warnings, tc.wantWarningPart)
			}
		})
	}
}
