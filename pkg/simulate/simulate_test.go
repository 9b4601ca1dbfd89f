package simulate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const defaultPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`

// existingNodeYAML is an m5.xlarge of the default NodePool with 3920m CPU
// allocatable.
const existingNodeYAML = `apiVersion: v1
kind: Node
metadata:
  name: existing-1
  labels: {kubernetes.io/hostname: existing-1, node.kubernetes.io/instance-type: m5.xlarge, karpenter.sh/nodepool: default}
status:
  capacity: {cpu: "4", memory: 16Gi, pods: "58"}
  allocatable: {cpu: "3920m", memory: 14Gi, pods: "58"}
`

func writeManifest(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExistingNodesTakePodsFirst(t *testing.T) {
	path := writeManifest(t, defaultPool+"---\n"+existingNodeYAML+`---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: app}
spec:
  nodeName: existing-1
  containers: [{name: c, image: i, resources: {requests: {cpu: "3", memory: 2Gi}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: app}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: i, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
`)
	rep := simulateFiles(t, path)
	// 920m is left on the existing node: one 500m pod fits there, the
	// other two need a new node.
	if len(rep.ExistingNodes) != 1 || rep.ExistingNodes[0].Node != "existing-1" || len(rep.ExistingNodes[0].Pods) != 1 {
		t.Errorf("existing nodes = %+v, want one web pod on existing-1", rep.ExistingNodes)
	}
	if rep.TotalNodes != 1 || rep.TotalPods != 2 || rep.PendingPods != 3 || !rep.AllPlaced() {
		t.Errorf("%d nodes, %d of %d pods on new nodes, unschedulable %v; want 1 node with 2 of 3", rep.TotalNodes, rep.TotalPods, rep.PendingPods, rep.Unschedulable)
	}
	checkTotals(t, rep)
}

func TestLimitRangeDefaultsSizeNodes(t *testing.T) {
	path := writeManifest(t, defaultPool+`---
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: team}
spec:
  limits:
    - type: Container
      defaultRequest: {cpu: "1", memory: 2Gi}
---
apiVersion: v1
kind: Pod
metadata: {name: bare, namespace: team}
spec:
  containers: [{name: c, image: i}]
`)
	rep := simulateFiles(t, path)
	if rep.TotalNodes != 1 {
		t.Fatalf("%d nodes, want 1", rep.TotalNodes)
	}
	got := rep.NodeClaims[0].Requests
	if cpu := got[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("requests cpu %s, want the LimitRange default 1", cpu.String())
	}
}

func TestWarnings(t *testing.T) {
	path := writeManifest(t, "apiVersion: karpenter.kwok.sh/v1alpha1\nkind: KWOKNodeClass\nmetadata: {name: other}\n---\n"+defaultPool+`---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: static}
spec:
  replicas: 2
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: other}
      requirements: []
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
`)
	rep := simulateFiles(t, path)
	want := []string{
		path + ": document 4: skipped v1 ConfigMap: kind not used by karp",
		`NodePool default: KWOKNodeClass "default" is not among the manifests; assuming it exists`,
	}
	if diff := cmp.Diff(want, rep.Warnings); diff != "" {
		t.Errorf("warnings (-want,+got):\n%s", diff)
	}
}

func TestRunReportsBadInput(t *testing.T) {
	path := writeManifest(t, strings.Replace(defaultPool, "operator: In, values: [on-demand]", "operator: Exists, values: [on-demand]", 1))
	_, err := Run(t.Context(), Options{Paths: []string{path}, InstanceTypes: ec2Catalog(t)})
	for _, want := range []string{path + ": document 1", "NodePool default", "spec.template.spec.requirements[1].values", "requirements with operator 'Exists' or 'DoesNotExist' must not have values"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
	if _, err := Run(t.Context(), Options{Paths: []string{seed(t, "")}}); err == nil {
		t.Error("running without instance types succeeded")
	}
}

func TestDeterministic(t *testing.T) {
	files := []string{seed(t, "")}
	a, b := simulateFiles(t, files...), simulateFiles(t, files...)
	if diff := cmp.Diff(a, b, cmp.AllowUnexported(Report{})); diff != "" {
		t.Errorf("two runs differ (-first,+second):\n%s", diff)
	}
}

func TestNoNodePools(t *testing.T) {
	rep := simulateFiles(t, seed(t, "nginx-demo.yaml"))
	if rep.TotalNodes != 0 || len(rep.Unschedulable) != 2 {
		t.Fatalf("%d nodes and %d pending, want 0 and 2", rep.TotalNodes, len(rep.Unschedulable))
	}
	if diff := cmp.Diff([]string{"no NodePool can launch nodes [NoNodePool]"}, rep.Unschedulable[0].Reasons); diff != "" {
		t.Errorf("reasons (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"no dynamic NodePool among the manifests: karp would launch nothing"}, rep.Warnings); diff != "" {
		t.Errorf("warnings (-want,+got):\n%s", diff)
	}
}
