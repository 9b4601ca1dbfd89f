package view_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/view"
)

func node(name, pool, instanceType, zone, capacityType, cpu, memory string, ready bool) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			karpv1.NodePoolLabelKey: pool, corev1.LabelInstanceTypeStable: instanceType,
			corev1.LabelTopologyZone: zone, karpv1.CapacityTypeLabelKey: capacityType,
		}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
		},
	}
}

func pod(name, nodeName, cpu, memory string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
		}}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func prices() view.PriceTable {
	return view.NewPriceTable([]*scheduling.InstanceType{
		{Name: "m5.xlarge", Offerings: []*scheduling.Offering{
			{Zone: "us-east-1a", CapacityType: "on-demand", Price: 0.192},
			{Zone: "us-east-1a", CapacityType: "spot", Price: 0.0712},
		}},
		{Name: "p3.8xlarge", Offerings: []*scheduling.Offering{{Zone: "us-east-1b", CapacityType: "on-demand", Price: 12.24}}},
	})
}

func fixedSnapshot() view.Snapshot {
	nodes := []*corev1.Node{
		node("gpu-abcde", "gpu", "p3.8xlarge", "us-east-1b", "on-demand", "31850m", "228187Mi", true),
		node("default-x1", "default", "m5.xlarge", "us-east-1a", "spot", "3920m", "14162Mi", true),
		node("default-x2", "default", "m5.xlarge", "us-east-1a", "on-demand", "3920m", "14162Mi", false),
		node("static", "", "t9.unknown", "", "", "2", "4Gi", true),
	}
	pods := []*corev1.Pod{
		pod("a", "default-x1", "1", "2Gi", corev1.PodRunning),
		pod("b", "default-x1", "500m", "1Gi", corev1.PodRunning),
		pod("done", "default-x1", "2", "2Gi", corev1.PodSucceeded),
		pod("g", "gpu-abcde", "1", "4Gi", corev1.PodRunning),
		pod("pending", "", "1", "1Gi", corev1.PodPending),
	}
	return view.Build(nodes, pods, prices())
}

func TestBuildSumsRequestsAndPrices(t *testing.T) {
	snap := fixedSnapshot()
	var names []string
	for _, row := range snap.Nodes {
		names = append(names, row.Name)
	}
	if diff := cmp.Diff([]string{"static", "default-x1", "default-x2", "gpu-abcde"}, names); diff != "" {
		t.Errorf("row order (-want,+got):\n%s", diff)
	}
	x1 := snap.Nodes[1]
	if x1.Pods != 2 || x1.CPURequested.MilliValue() != 1500 || x1.MemoryRequested.Value() != 3<<30 {
		t.Errorf("default-x1: %d pods, cpu %s, memory %s; want 2 pods, 1500m, 3Gi (the succeeded pod excluded)",
			x1.Pods, x1.CPURequested.String(), x1.MemoryRequested.String())
	}
	if !x1.Priced || x1.Price != 0.0712 {
		t.Errorf("default-x1 price %v (priced %v), want the spot offering's 0.0712", x1.Price, x1.Priced)
	}
	if snap.Nodes[0].Priced {
		t.Error("a Node of an unknown offering got a price")
	}
	if want := 0.0712 + 0.192 + 12.24; snap.TotalPrice < want-1e-9 || snap.TotalPrice > want+1e-9 {
		t.Errorf("total %v, want %v", snap.TotalPrice, want)
	}
	if snap.PendingPods != 1 || snap.RunningPods != 3 {
		t.Errorf("pending %d running %d, want 1 and 3", snap.PendingPods, snap.RunningPods)
	}
}

func TestRenderFixedSnapshot(t *testing.T) {
	var b strings.Builder
	if err := view.Render(&b, "kubeconfig: /tmp/k", fixedSnapshot(), false); err != nil {
		t.Fatal(err)
	}
	want := "kubeconfig: /tmp/k\n\n" +
		"\x1b[1mNODE                    NODEPOOL  INSTANCE TYPE  ZONE        CAPACITY   $/HOUR   PODS  CPU REQ/ALLOC    MEMORY REQ/ALLOC\x1b[0m\n" +
		"static                  -         t9.unknown     -           -          -        0     0.00/2.00 (0%)   0.0Gi/4.0Gi (0%)\n" +
		"default-x1              default   m5.xlarge      us-east-1a  spot       0.0712   2     1.50/3.92 (38%)  3.0Gi/13.8Gi (21%)\n" +
		"default-x2 (not ready)  default   m5.xlarge      us-east-1a  on-demand  0.1920   0     0.00/3.92 (0%)   0.0Gi/13.8Gi (0%)\n" +
		"gpu-abcde               gpu       p3.8xlarge     us-east-1b  on-demand  12.2400  1     1.00/31.85 (3%)  4.0Gi/222.8Gi (1%)\n" +
		"\n\x1b[1m4 nodes, $12.5032/hour\x1b[0m; 3 pods running, 1 pending\n" +
		"\n\x1b[1mPending\x1b[0m (karp explain pod NAMESPACE/NAME for more)\n" +
		"  default/pending: waiting for the kube-scheduler or karp\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("frame (-want,+got):\n%s", diff)
	}
}

func TestRenderClearsTheScreenBetweenFrames(t *testing.T) {
	var b strings.Builder
	if err := view.Render(&b, "", view.Snapshot{}, true); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "\x1b[H\x1b[2J") {
		t.Errorf("frame does not start by clearing the screen: %q", b.String()[:10])
	}
	if !strings.Contains(b.String(), "0 nodes, $0.0000/hour") {
		t.Errorf("empty cluster frame: %q", b.String())
	}
}

// TestRenderExplains: below the table, each pending pod with the telling
// reason of karp's latest FailedScheduling event (not the scheduler's, not
// an older one), and each node karp keeps with its DisruptionBlocked.
func TestRenderExplains(t *testing.T) {
	snap := fixedSnapshot()
	event := func(msg, controller string, at time.Time) *corev1.Event {
		return &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "pending"},
			Reason: "FailedScheduling", Message: msg, ReportingController: controller, LastTimestamp: metav1.NewTime(at)}
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	latest := scheduling.NewStatus(scheduling.Unschedulable,
		scheduling.PoolReason("gpu", scheduling.ReasonIncompatibleRequirements, "incompatible requirements: requires karpenter.sh/nodepool In [default]"),
		scheduling.PoolReason("default", scheduling.ReasonNodePoolLimit, "limit cpu=10 reached (8 in use)")).Message()
	events := []*corev1.Event{
		event("NodePool default: taint x not tolerated [TaintNotTolerated]", "karpenter", now.Add(-time.Minute)),
		event("Failed to schedule pod, "+latest, "karpenter", now),
		event("0/4 nodes are available: 4 Insufficient cpu.", "default-scheduler", now.Add(time.Minute)),
	}
	claim := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"nodeName": "default-x1",
		"conditions": []any{map[string]any{"type": "DisruptionBlocked", "status": "True", "reason": "PodDisruptionBudget", "message": "pdb default/web allows no disruption"}}}}}
	snap.Explain(view.FailedScheduling(events), view.DisruptionBlocked([]runtime.Object{claim}))
	var b strings.Builder
	if err := view.Render(&b, "", snap, false); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  default/pending: NodePool default: limit cpu=10 reached (8 in use) [NodePoolLimit] (+1 more)\n",
		"  default-x1: PodDisruptionBudget: pdb default/web allows no disruption\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("frame does not say %q:\n%s", want, b.String())
		}
	}
}
