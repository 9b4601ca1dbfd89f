package simulation

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestStaticNodeClaims(t *testing.T) {
	static := func() *test.NodePoolWrapper { return test.MakeNodePool("static").Replicas(3) }
	for name, tc := range map[string]struct {
		pool       *karpv1.NodePool
		daemonSets []*appsv1.DaemonSet
		opts       Options
		count      int
		wantType   string // instance type of every NodeClaim; "" expects a reason
		wantCPU    string // requested cpu (the DaemonSets' overhead)
	}{
		"the cheapest type of the template": {
			pool: static().Obj(), count: 3, wantType: "general-small", wantCPU: "0",
		},
		"the template's requirements narrow the types": {
			pool:  static().Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64").Obj(),
			count: 1, wantType: "arm-medium", wantCPU: "0",
		},
		"DaemonSets size the node": {
			pool:       static().Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64").Obj(),
			daemonSets: []*appsv1.DaemonSet{test.MakeDaemonSet("agent").Requests("cpu", "3").Obj()},
			count:      2, wantType: "general-medium", wantCPU: "3",
		},
		"no type satisfies the template": {
			pool:  static().Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "no-such-type").Obj(),
			count: 1,
		},
		"no type holds the DaemonSets": {
			pool:       static().Obj(),
			daemonSets: []*appsv1.DaemonSet{test.MakeDaemonSet("agent").Requests("cpu", "64").Obj()},
			count:      1,
		},
		"minValues the types cannot meet": {
			pool:  static().RequirementWithMinValues(corev1.LabelArchStable, corev1.NodeSelectorOpIn, 3, "amd64", "arm64").Obj(),
			count: 1,
		},
		"minValues relaxed under BestEffort": {
			pool:  static().RequirementWithMinValues(corev1.LabelArchStable, corev1.NodeSelectorOpIn, 3, "amd64", "arm64").Obj(),
			opts:  Options{MinValuesPolicy: MinValuesPolicyBestEffort},
			count: 1, wantType: "general-small", wantCPU: "0",
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := Input{DaemonSets: tc.daemonSets, Options: tc.opts}
			got, reason := StaticNodeClaims(in, withTypes(tc.pool), tc.count)
			if tc.wantType == "" {
				if reason == "" || len(got) != 0 {
					t.Fatalf("StaticNodeClaims = %d NodeClaims, reason %q; want none and a reason", len(got), reason)
				}
				return
			}
			if reason != "" || len(got) != tc.count {
				t.Fatalf("StaticNodeClaims = %d NodeClaims, reason %q; want %d", len(got), reason, tc.count)
			}
			for i, nc := range got {
				if nc.InstanceType.Name != tc.wantType {
					t.Errorf("NodeClaim %d type = %s, want %s", i, nc.InstanceType.Name, tc.wantType)
				}
				if nc.NodePool != tc.pool || len(nc.Pods) != 0 {
					t.Errorf("NodeClaim %d: NodePool %v with %d pods, want the static NodePool and none", i, nc.NodePool.Name, len(nc.Pods))
				}
				if cpu := nc.Requests[corev1.ResourceCPU]; cpu.Cmp(test.ResourceList("cpu", tc.wantCPU)[corev1.ResourceCPU]) != 0 {
					t.Errorf("NodeClaim %d requests cpu %s, want %s", i, cpu.String(), tc.wantCPU)
				}
				types := nc.Requirements.Get(corev1.LabelInstanceTypeStable)
				if types == nil || !types.Has(tc.wantType) {
					t.Errorf("NodeClaim %d instance-type requirement %v does not list %s", i, types, tc.wantType)
				}
				if pool := nc.Requirements.Get(karpv1.NodePoolLabelKey); pool == nil || !pool.Has(tc.pool.Name) {
					t.Errorf("NodeClaim %d nodepool requirement = %v, want %s", i, pool, tc.pool.Name)
				}
			}
		})
	}
}

// TestStaticNodeClaimsListTypesCheapestFirst: like a NodeClaim for pods, a
// static NodeClaim lists every type the template allows, cheapest first,
// so the provider can fall back when the cheapest has no capacity.
func TestStaticNodeClaimsListTypesCheapestFirst(t *testing.T) {
	pool := test.MakeNodePool("static").Replicas(1).Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64").Obj()
	got, reason := StaticNodeClaims(Input{}, withTypes(pool), 1)
	if reason != "" {
		t.Fatal(reason)
	}
	var names []string
	for _, it := range got[0].InstanceTypes {
		names = append(names, it.Name)
	}
	want := []string{"general-small", "general-medium", "memory-large", "general-large", "gpu-large"}
	if len(names) != len(want) {
		t.Fatalf("types = %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("types = %v, want %v", names, want)
		}
	}
}
