package simulate

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// TestSeedScenarios runs each seed scenario the way a user would apply it
// and checks where karp would put the pods.
func TestSeedScenarios(t *testing.T) {
	myTeamTypes := sets.New("m5.large", "m5.xlarge", "m5.2xlarge", "c5.large", "c5.xlarge", "c5a.large", "c5a.xlarge", "r5.large", "r5.xlarge")
	tests := map[string]struct {
		files     []string
		wantPods  int
		wantNodes int // 0: not checked
		check     func(t *testing.T, rep *Report)
	}{
		"GPU pods land on p3 on-demand nodes": {
			files:    []string{seed(t, "nodepool-gpu.yaml"), seed(t, "deployment-inflate-gpu.yaml")},
			wantPods: 3, wantNodes: 1,
			check: func(t *testing.T, rep *Report) {
				for _, nc := range rep.NodeClaims {
					if nc.NodePool != "gpu" || nc.CapacityType != "on-demand" || !sets.New("p3.8xlarge", "p3.16xlarge").Has(nc.InstanceType) {
						t.Errorf("NodeClaim %s %s %s, want gpu on-demand p3.8xlarge/p3.16xlarge", nc.NodePool, nc.InstanceType, nc.CapacityType)
					}
					if extra := sets.New(nc.InstanceTypeOptions...).Delete("p3.8xlarge", "p3.16xlarge"); extra.Len() > 0 {
						t.Errorf("NodeClaim allows other types %v", sets.List(extra))
					}
				}
				// Three 1-GPU pods fit the 4 GPUs of one p3.8xlarge at $12.24/hour.
				if rep.NodeClaims[0].InstanceType != "p3.8xlarge" || rep.TotalPricePerHour != 12.24 {
					t.Errorf("launches %s for $%v/hour, want one p3.8xlarge for $12.24", rep.NodeClaims[0].InstanceType, rep.TotalPricePerHour)
				}
			},
		},
		"my-team pods only on the listed types": {
			files:    []string{seed(t, "nodepool-generalcompute.yaml"), seed(t, "deployment-my-team.yaml")},
			wantPods: 200,
			check: func(t *testing.T, rep *Report) {
				for _, nc := range rep.NodeClaims {
					if !myTeamTypes.Has(nc.InstanceType) || nc.CapacityType != "on-demand" {
						t.Errorf("NodeClaim on %s %s, want a listed on-demand type", nc.InstanceType, nc.CapacityType)
					}
					if extra := sets.New(nc.InstanceTypeOptions...).Difference(myTeamTypes); extra.Len() > 0 {
						t.Errorf("NodeClaim allows unlisted types %v", sets.List(extra))
					}
					for _, p := range nc.Pods {
						if !strings.HasPrefix(p, "default/workload-my-team-") {
							t.Errorf("unexpected pod %s", p)
						}
					}
				}
			},
		},
		"nginx-demo replicas on separate nodes": {
			files:    []string{seed(t, "nodepools-default-stable.yaml"), seed(t, "nginx-demo.yaml")},
			wantPods: 2, wantNodes: 2,
			check: func(t *testing.T, rep *Report) {
				for _, nc := range rep.NodeClaims {
					if len(nc.Pods) != 1 || !strings.HasPrefix(nc.Pods[0], "default/nginx-demo-deployment-") {
						t.Errorf("NodeClaim pods = %v, want one nginx-demo replica", nc.Pods)
					}
					if nc.NodePool != "default" {
						t.Errorf("replica on NodePool %s, want default (stable is tainted)", nc.NodePool)
					}
				}
			},
		},
		"DaemonSet overhead on every node it targets, tainted ones included": {
			files: []string{seed(t, "nodepools-default-stable.yaml"), seed(t, "daemonset-all-nodes.yaml"),
				seed(t, "nginx-demo.yaml"), testdata("stable-workload.yaml")},
			wantPods: 4, wantNodes: 4,
			check: func(t *testing.T, rep *Report) {
				pools := map[string]int{}
				for _, nc := range rep.NodeClaims {
					pools[nc.NodePool]++
					want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi"), corev1.ResourcePods: resource.MustParse("1")}
					if !equalResources(want, nc.DaemonSetOverhead) {
						t.Errorf("NodeClaim on %s overhead = %v, want the log-collector's cpu 200m, memory 256Mi, 1 pod", nc.NodePool, nc.DaemonSetOverhead)
					}
					// Requests are the pods' plus the overhead, and fit.
					for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
						req, alloc, over := nc.Requests[name], nc.Allocatable[name], nc.DaemonSetOverhead[name]
						if req.Cmp(over) < 0 || req.Cmp(alloc) > 0 {
							t.Errorf("NodeClaim %s %s requests %s, overhead %s, allocatable %s", nc.InstanceType, name, req.String(), over.String(), alloc.String())
						}
					}
				}
				if diff := cmp.Diff(map[string]int{"default": 2, "stable": 2}, pools); diff != "" {
					t.Errorf("NodeClaims per pool (-want,+got):\n%s", diff)
				}
			},
		},
		"do-not-disrupt pod with the PriorityClass workaround": {
			files:    []string{seed(t, "nodepools-default-stable.yaml"), seed(t, "nginx-do-not-disrupt.yaml"), seed(t, "priorityclass.yaml")},
			wantPods: 1, wantNodes: 1,
		},
		"spot NodePool prefers spot c/m/r generation 5+": {
			files:    []string{seed(t, "nodepool-spot.yaml"), seed(t, "nginx-do-not-disrupt.yaml")},
			wantPods: 1, wantNodes: 1,
			check: func(t *testing.T, rep *Report) {
				nc := rep.NodeClaims[0]
				cat := instanceType(t, nc.InstanceType).Requirements["karpenter.k8s.aws/instance-category"].Values()
				if nc.CapacityType != "spot" || !sets.New("c", "m", "r").Has(cat[0]) {
					t.Errorf("NodeClaim %s %s (category %v), want spot c/m/r", nc.InstanceType, nc.CapacityType, cat)
				}
			},
		},
		"every seed manifest at once": {
			files:    []string{seed(t, "")},
			wantPods: 206,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rep := simulateFiles(t, tc.files...)
			if len(rep.Unschedulable) > 0 {
				t.Fatalf("pods would stay pending: %+v", rep.Unschedulable)
			}
			if rep.TotalPods != tc.wantPods || rep.PendingPods != tc.wantPods {
				t.Errorf("placed %d of %d pods, want %d", rep.TotalPods, rep.PendingPods, tc.wantPods)
			}
			if tc.wantNodes > 0 && rep.TotalNodes != tc.wantNodes {
				t.Errorf("%d NodeClaims, want %d", rep.TotalNodes, tc.wantNodes)
			}
			checkTotals(t, rep)
			if tc.check != nil {
				tc.check(t, rep)
			}
		})
	}
}

// checkTotals checks the totals add up: price, month, nodes, pods; each
// NodeClaim's price is its instance type's offering price in its zone and
// capacity type; no pod is placed twice.
func checkTotals(t *testing.T, rep *Report) {
	t.Helper()
	sum, pods := 0.0, 0
	seen := sets.New[string]()
	for _, nc := range rep.NodeClaims {
		sum += nc.PricePerHour
		pods += len(nc.Pods)
		for _, p := range nc.Pods {
			if seen.Has(p) {
				t.Errorf("pod %s placed twice", p)
			}
			seen.Insert(p)
		}
		found := false
		for _, o := range instanceType(t, nc.InstanceType).Offerings {
			if o.Zone == nc.Zone && o.CapacityType == nc.CapacityType && o.Price == nc.PricePerHour {
				found = true
			}
		}
		if !found {
			t.Errorf("NodeClaim %s %s %s at $%v matches no catalog offering", nc.InstanceType, nc.Zone, nc.CapacityType, nc.PricePerHour)
		}
	}
	if math.Abs(sum-rep.TotalPricePerHour) > 1e-4 {
		t.Errorf("totalPricePerHour = %v, NodeClaims sum to %v", rep.TotalPricePerHour, sum)
	}
	if math.Abs(rep.TotalPricePerHour*730-rep.TotalPricePerMonth) > 0.01 {
		t.Errorf("totalPricePerMonth = %v, want 730 × %v", rep.TotalPricePerMonth, rep.TotalPricePerHour)
	}
	onExisting := 0
	for _, e := range rep.ExistingNodes {
		onExisting += len(e.Pods)
	}
	for _, u := range rep.Unschedulable {
		if seen.Has(u.Pod) {
			t.Errorf("pod %s is both placed and unschedulable", u.Pod)
		}
	}
	if got := pods + onExisting + len(rep.Unschedulable); got != rep.PendingPods {
		t.Errorf("%d pods placed new, %d on existing nodes, %d unschedulable: %d in all, want every one of %d pending pods accounted for",
			pods, onExisting, len(rep.Unschedulable), got, rep.PendingPods)
	}
	if rep.TotalNodes != len(rep.NodeClaims) || rep.TotalPods != pods {
		t.Errorf("totals say %d nodes, %d pods; NodeClaims hold %d nodes, %d pods", rep.TotalNodes, rep.TotalPods, len(rep.NodeClaims), pods)
	}
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

// TestUnschedulableReasons checks the exact reasons for pods that are
// deliberately impossible to place.
func TestUnschedulableReasons(t *testing.T) {
	tests := map[string]struct {
		files []string
		want  []Unschedulable
	}{
		"GPU pod without the toleration": {
			files: []string{seed(t, "nodepool-gpu.yaml"), seed(t, "deployment-inflate-gpu.yaml"), testdata("gpu-without-toleration.yaml")},
			want: []Unschedulable{{Pod: "default/gpu-no-toleration", Code: "UnschedulableAndUnresolvable",
				Reasons: []string{"NodePool gpu: taint nvidia.com/gpu=true:NoSchedule not tolerated [TaintNotTolerated]"},
				Details: []scheduling.Reason{{NodePool: "gpu", Code: scheduling.ReasonTaintNotTolerated, Message: "taint nvidia.com/gpu=true:NoSchedule not tolerated"}}}},
		},
		"pod larger than every instance type": {
			files: []string{seed(t, "nodepools-default-stable.yaml"), testdata("oversized-pod.yaml")},
			want: []Unschedulable{{Pod: "batch/oversized", Code: "UnschedulableAndUnresolvable",
				Reasons: []string{"NodePool stable: taint nodepool/stable:NoSchedule not tolerated [TaintNotTolerated]",
					"NodePool default: no instance type has 1000 cpu (the largest allocatable is 893.69) [InstanceTypesTooSmall]"},
				Details: []scheduling.Reason{
					{NodePool: "stable", Code: scheduling.ReasonTaintNotTolerated, Message: "taint nodepool/stable:NoSchedule not tolerated"},
					{NodePool: "default", Code: scheduling.ReasonInstanceTypesTooSmall, Message: "no instance type has 1000 cpu (the largest allocatable is 893.69)"}}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rep := simulateFiles(t, tc.files...)
			if diff := cmp.Diff(tc.want, rep.Unschedulable); diff != "" {
				t.Errorf("unschedulable (-want,+got):\n%s", diff)
			}
			checkTotals(t, rep)
		})
	}
}

// TestNodePoolAtItsLimit fills the limited NodePool (cpu 1000, memory
// 1000Gi) with 140 pods of 8 cpu and 8Gi: it launches until the next node
// would cross a limit, and the rest stay pending naming that limit and
// what is in use, which must equal the capacity of the launched nodes.
func TestNodePoolAtItsLimit(t *testing.T) {
	rep := simulateFiles(t, seed(t, "nodepool-limits.yaml"), testdata("cpu-hungry.yaml"))
	if len(rep.Unschedulable) == 0 || rep.TotalPods+len(rep.Unschedulable) != 140 {
		t.Fatalf("placed %d and left %d pending, want 140 in all with some pending", rep.TotalPods, len(rep.Unschedulable))
	}
	used := corev1.ResourceList{}
	for _, nc := range rep.NodeClaims {
		for name, q := range instanceType(t, nc.InstanceType).Capacity {
			v := used[name]
			v.Add(q)
			used[name] = v
		}
	}
	limits := map[corev1.ResourceName]resource.Quantity{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("1000Gi")}
	reasonRE := regexp.MustCompile(`^NodePool limited: limit (cpu|memory)=(\S+) reached \((\S+) in use\) \[NodePoolLimit\]$`)
	for _, u := range rep.Unschedulable {
		if u.Code != "Unschedulable" || len(u.Reasons) != 1 {
			t.Fatalf("pod %s: %s %q, want one Unschedulable reason", u.Pod, u.Code, u.Reasons)
		}
		m := reasonRE.FindStringSubmatch(u.Reasons[0])
		if m == nil {
			t.Fatalf("pod %s: reason %q does not name the limit", u.Pod, u.Reasons[0])
		}
		name := corev1.ResourceName(m[1])
		limit, inUse := resource.MustParse(m[2]), resource.MustParse(m[3])
		if want := limits[name]; limit.Cmp(want) != 0 {
			t.Errorf("reason names limit %s=%s, want %s", name, m[2], want.String())
		}
		if got := used[name]; inUse.Cmp(got) != 0 {
			t.Errorf("reason says %s in use, launched capacity is %s", m[3], got.String())
		}
		if inUse.Cmp(limit) > 0 {
			t.Errorf("%s in use exceeds the limit %s", m[3], m[2])
		}
	}
	for name, limit := range limits {
		if got := used[name]; got.Cmp(limit) > 0 {
			t.Errorf("launched %s %s, over the limit %s", name, got.String(), limit.String())
		}
	}
	checkTotals(t, rep)
	t.Logf("%d nodes, %d pods placed, %d pending: %s", rep.TotalNodes, rep.TotalPods, len(rep.Unschedulable), rep.Unschedulable[0].Reasons[0])
}
