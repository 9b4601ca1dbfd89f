package simulate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/karp-autoscaler/karp/pkg/options"
)

// onDemandPrice is the catalog's on-demand price of the type in the zone.
func onDemandPrice(t *testing.T, typeName, zone string) float64 {
	t.Helper()
	for _, o := range instanceType(t, typeName).Offerings {
		if o.Zone == zone && o.CapacityType == "on-demand" {
			return o.Price
		}
	}
	t.Fatalf("%s has no on-demand offering in %s", typeName, zone)
	return 0
}

func gatesOf(t *testing.T, value string) *options.FeatureGates {
	t.Helper()
	g := options.DefaultFeatureGates()
	if err := g.Set(value); err != nil {
		t.Fatal(err)
	}
	return &g
}

// TestStaticNodePoolNodesAndPods: testdata/static-nodepool.yaml has a
// static NodePool of 2 replicas (m5.xlarge or c5.xlarge, on-demand), a
// dynamic one, and 6 pods of 1.5 cpu: each static node (3.92 cpu
// allocatable) takes 2, the dynamic NodePool the other 2.
func TestStaticNodePoolNodesAndPods(t *testing.T) {
	rep := simulateFiles(t, testdata("static-nodepool.yaml"))
	if len(rep.NodeClaims) != 3 {
		t.Fatalf("%d nodes, want 2 static + 1 dynamic: %+v", len(rep.NodeClaims), rep.NodeClaims)
	}
	// The static controller's choice: the cheapest type the template
	// allows (c5.xlarge is cheaper than m5.xlarge on demand).
	if c5, m5 := onDemandPrice(t, "c5.xlarge", "us-east-1a"), onDemandPrice(t, "m5.xlarge", "us-east-1a"); c5 >= m5 {
		t.Fatalf("catalog: c5.xlarge %v is not cheaper than m5.xlarge %v; the test's premise is wrong", c5, m5)
	}
	wantPrice := onDemandPrice(t, "c5.xlarge", "us-east-1a")
	staticPrice := 0.0
	for i, nc := range rep.NodeClaims[:2] {
		if !nc.Static || nc.NodePool != "reserved" || nc.InstanceType != "c5.xlarge" || nc.CapacityType != "on-demand" || nc.PricePerHour != wantPrice {
			t.Errorf("node %d = %s %s %s $%v static=%v, want reserved c5.xlarge on-demand $%v static", i, nc.NodePool, nc.InstanceType,
				nc.CapacityType, nc.PricePerHour, nc.Static, wantPrice)
		}
		if len(nc.Pods) != 2 {
			t.Errorf("static node %d holds %v, want 2 pods", i, nc.Pods)
		}
		if cpu := nc.Requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("3")) != 0 {
			t.Errorf("static node %d requests cpu %s, want 3 (two pods of 1.5)", i, cpu.String())
		}
		staticPrice += nc.PricePerHour
	}
	dyn := rep.NodeClaims[2]
	if dyn.Static || dyn.NodePool != "default" || len(dyn.Pods) != 2 {
		t.Errorf("third node = %+v, want a dynamic default node with the 2 pods left", dyn)
	}
	if rep.TotalNodes != 3 || rep.TotalPods != 6 || rep.PendingPods != 6 || !rep.AllPlaced() {
		t.Errorf("totals: %d nodes, %d of %d pods placed, unschedulable %+v; want 3 nodes, 6 of 6", rep.TotalNodes, rep.TotalPods, rep.PendingPods, rep.Unschedulable)
	}
	if want := roundCents(staticPrice + dyn.PricePerHour); rep.TotalPricePerHour != want {
		t.Errorf("total $%v/hour, want $%v (static nodes included)", rep.TotalPricePerHour, want)
	}
	// The objects are what the controllers create: a static NodeClaim
	// requests only its DaemonSets' overhead (none here), not the pods.
	if objs := rep.NodeClaimObjects(); len(objs) != 3 || objs[0].Labels["karpenter.sh/nodepool"] != "reserved" || !objs[0].Spec.Resources.Requests.Cpu().IsZero() {
		t.Errorf("NodeClaim objects: want 3, the first of NodePool reserved requesting no cpu")
	}
}

func TestStaticNodePoolCounts(t *testing.T) {
	pool := func(replicas, nodeLimit string) string {
		s := `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: reserved}
spec:
  replicas: ` + replicas + `
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`
		if nodeLimit != "" {
			s += "  limits: {nodes: " + nodeLimit + "}\n"
		}
		return s
	}
	member := `---
apiVersion: v1
kind: Node
metadata:
  name: reserved-1
  labels: {kubernetes.io/hostname: reserved-1, node.kubernetes.io/instance-type: m5.large, karpenter.sh/nodepool: reserved}
status:
  allocatable: {cpu: "1930m", memory: 7Gi, pods: "29"}
`
	daemonSet := `---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: a, image: i, resources: {requests: {cpu: 250m, memory: 256Mi}}}]
`
	tests := map[string]struct {
		manifests   string
		gates       *options.FeatureGates
		wantStatic  int
		wantWarning string
	}{
		"replicas":                           {manifests: pool("3", ""), wantStatic: 3},
		"limits.nodes caps the replicas":     {manifests: pool("3", "2"), wantStatic: 2, wantWarning: "NodePool reserved: spec.replicas is 3 but limits.nodes is 2"},
		"an existing member counts":          {manifests: pool("3", "") + member, wantStatic: 2},
		"gate on by --feature-gates":         {manifests: pool("2", ""), gates: gatesOf(t, "StaticCapacity=true"), wantStatic: 2},
		"gate off: inert, as the controller": {manifests: pool("2", ""), gates: gatesOf(t, "NodeOverlay=true"), wantWarning: "NodePool reserved: static (replicas 2) but the StaticCapacity feature gate is off: inert"},
		"the DaemonSets' overhead is on it":  {manifests: pool("1", "") + daemonSet, wantStatic: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rep, err := Run(t.Context(), Options{Paths: []string{writeManifest(t, tc.manifests)}, InstanceTypes: ec2Catalog(t), FeatureGates: tc.gates})
			if err != nil {
				t.Fatal(err)
			}
			static := 0
			for _, nc := range rep.NodeClaims {
				if nc.Static {
					static++
				}
			}
			if static != tc.wantStatic || rep.TotalNodes != tc.wantStatic {
				t.Errorf("%d static of %d nodes, want %d", static, rep.TotalNodes, tc.wantStatic)
			}
			if tc.wantWarning != "" && !strings.Contains(strings.Join(rep.Warnings, "\n"), tc.wantWarning) {
				t.Errorf("warnings %q do not contain %q", rep.Warnings, tc.wantWarning)
			}
			if strings.Contains(tc.manifests, "DaemonSet") {
				nc := rep.NodeClaims[0]
				if cpu := nc.DaemonSetOverhead[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("250m")) != 0 {
					t.Errorf("static node's DaemonSet overhead cpu %s, want 250m", cpu.String())
				}
			}
		})
	}
}
