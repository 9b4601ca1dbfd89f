package provisioningrequest

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

const (
	checkCapacity = autoscalingv1.ProvisioningClassCheckCapacity
	atomic        = autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cond := func(ty string, status metav1.ConditionStatus, at time.Time) metav1.Condition {
		return metav1.Condition{Type: ty, Status: status, LastTransitionTime: metav1.NewTime(at)}
	}
	provisionedAt := func(at time.Time) []metav1.Condition {
		return []metav1.Condition{cond(autoscalingv1.Provisioned, metav1.ConditionTrue, at)}
	}
	for name, tc := range map[string]struct {
		obs      observation
		wantStep step
		wantLeft time.Duration
	}{
		"an unknown class is left alone":         {obs: observation{class: "queued-provisioning.gke.io"}, wantStep: stepIgnore},
		"check-capacity checks":                  {obs: observation{class: checkCapacity}, wantStep: stepCheck},
		"check-capacity not found retries":       {obs: observation{class: checkCapacity, conditions: []metav1.Condition{cond(autoscalingv1.Provisioned, metav1.ConditionFalse, t0)}}, wantStep: stepCheck},
		"atomic with nothing launched scales up": {obs: observation{class: atomic}, wantStep: stepScaleUp},
		"atomic past ValidUntilSeconds fails": {obs: observation{class: atomic, created: t0.Add(-2 * time.Minute), validUntil: time.Minute},
			wantStep: stepFail},
		"atomic within ValidUntilSeconds scales up": {obs: observation{class: atomic, created: t0.Add(-30 * time.Second), validUntil: time.Minute},
			wantStep: stepScaleUp},
		"atomic launching waits": {obs: observation{class: atomic, claims: claims{expected: 3, present: 3, launched: 2}},
			wantStep: stepWait},
		"atomic all launched is provisioned": {obs: observation{class: atomic, claims: claims{expected: 3, present: 3, launched: 3}},
			wantStep: stepProvisioned},
		"atomic with a NodeClaim gone rolls back": {obs: observation{class: atomic, claims: claims{expected: 3, present: 2, launched: 2}},
			wantStep: stepRollback},
		"atomic with a NodeClaim deleting rolls back": {obs: observation{class: atomic, claims: claims{expected: 3, present: 2, deleting: 1}},
			wantStep: stepRollback},
		"atomic rolled back waits for the deletions": {obs: observation{class: atomic, claims: claims{expected: 3, deleting: 3}},
			wantStep: stepWait},
		"provisioned holds the booking until it expires": {obs: observation{class: atomic, conditions: provisionedAt(t0.Add(-4 * time.Minute))},
			wantStep: stepHold, wantLeft: 6 * time.Minute},
		"provisioned past the booking period expires": {obs: observation{class: checkCapacity, conditions: provisionedAt(t0.Add(-10 * time.Minute))},
			wantStep: stepExpireBooking},
		"booking expired is released": {obs: observation{class: atomic, conditions: append(provisionedAt(t0.Add(-time.Hour)),
			cond(autoscalingv1.BookingExpired, metav1.ConditionTrue, t0))}, wantStep: stepRelease},
		"failed is released": {obs: observation{class: atomic, conditions: []metav1.Condition{cond(autoscalingv1.Failed, metav1.ConditionTrue, t0)}},
			wantStep: stepRelease},
	} {
		t.Run(name, func(t *testing.T) {
			gotStep, gotLeft := decide(tc.obs, t0, DefaultBookingPeriod)
			if gotStep != tc.wantStep || gotLeft != tc.wantLeft {
				t.Errorf("decide = (%d, %s), want (%d, %s)", gotStep, gotLeft, tc.wantStep, tc.wantLeft)
			}
		})
	}
}

func TestValidUntil(t *testing.T) {
	for name, tc := range map[string]struct {
		params map[string]autoscalingv1.Parameter
		want   time.Duration
	}{
		"unset":     {},
		"seconds":   {params: map[string]autoscalingv1.Parameter{"ValidUntilSeconds": "90"}, want: 90 * time.Second},
		"malformed": {params: map[string]autoscalingv1.Parameter{"ValidUntilSeconds": "1m"}},
		"negative":  {params: map[string]autoscalingv1.Parameter{"ValidUntilSeconds": "-5"}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := validUntil(tc.params); got != tc.want {
				t.Errorf("validUntil = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestExpandMakesCountPodsPerPodSet(t *testing.T) {
	pr := &autoscalingv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns", UID: "u"},
		Spec: autoscalingv1.ProvisioningRequestSpec{PodSets: []autoscalingv1.PodSet{
			{PodTemplateRef: autoscalingv1.Reference{Name: "a"}, Count: 2}, {PodTemplateRef: autoscalingv1.Reference{Name: "b"}, Count: 1}}}}
	tmpl := func(cpu string) *corev1.PodTemplate {
		return &corev1.PodTemplate{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
			Spec: test.MakePod("t").Requests("cpu", cpu).Obj().Spec}}
	}
	pods := expand(pr, map[string]*corev1.PodTemplate{"a": tmpl("1"), "b": tmpl("2")})
	var got []string
	uids := map[types.UID]bool{}
	for _, p := range pods {
		got = append(got, p.Namespace+"/"+p.Name+" "+p.Spec.Containers[0].Resources.Requests.Cpu().String()+" "+p.Annotations[autoscalingv1.ConsumeAnnotationKey])
		uids[p.UID] = true
	}
	if diff := cmp.Diff([]string{"ns/job-0-0 1 job", "ns/job-0-1 1 job", "ns/job-1-0 2 job"}, got); diff != "" {
		t.Errorf("pods (-want,+got):\n%s", diff)
	}
	if len(uids) != 3 {
		t.Errorf("%d distinct UIDs, want 3", len(uids))
	}
}

var fourCPU = fake.NewInstanceType(fake.InstanceTypeOptions{Name: "c4", Resources: test.ResourceList("cpu", "4", "memory", "16Gi", "pods", "20"),
	Offerings: []*cloudprovider.Offering{{Zone: "test-zone-1", CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.2, Available: true}}})

func existingNode(name, cpu string) *simulation.Node {
	rl := test.ResourceList("cpu", cpu, "memory", "16Gi", "pods", "20")
	return &simulation.Node{Name: name, Labels: map[string]string{corev1.LabelHostname: name}, Capacity: rl, Allocatable: rl,
		Initialized: true, Launched: true}
}

func requestPods(n int, cpu string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		name := "p" + string(rune('a'+i))
		out = append(out, test.MakePod(name).UID(name).Requests("cpu", cpu).Obj())
	}
	return out
}

// TestFit: check-capacity fits only on existing room and never on new
// nodes; the atomic class fits when every pod is placed and every new
// NodeClaim is within the NodePool's and the cluster's limits.
func TestFit(t *testing.T) {
	pool := func(limits corev1.ResourceList) *simulation.NodePool {
		np := test.MakeNodePool("default").Limits(limits).Obj()
		return &simulation.NodePool{NodePool: np, InstanceTypes: []*cloudprovider.InstanceType{fourCPU}}
	}
	for name, tc := range map[string]struct {
		pods          []*corev1.Pod
		nodes         []*simulation.Node
		pool          *simulation.NodePool
		clusterLimits corev1.ResourceList
		launch        bool
		wantFits      bool
		wantLaunch    int
		wantMessage   string
	}{
		"check-capacity: pods fit the existing nodes": {pods: requestPods(3, "1"), nodes: []*simulation.Node{existingNode("n1", "2"), existingNode("n2", "2")},
			wantFits: true, wantMessage: "all 3 pods fit on the existing nodes"},
		"check-capacity: one pod too many": {pods: requestPods(5, "1"), nodes: []*simulation.Node{existingNode("n1", "2"), existingNode("n2", "2")},
			wantMessage: "1 of 5 pods do not fit"},
		"atomic: room first, then new nodes": {pods: requestPods(6, "1"), nodes: []*simulation.Node{existingNode("n1", "2")}, pool: pool(nil),
			launch: true, wantFits: true, wantLaunch: 1, wantMessage: "all 6 pods fit: 1 new node(s)"},
		"atomic: within the NodePool's limit": {pods: requestPods(8, "1"), pool: pool(test.ResourceList("cpu", "8")),
			launch: true, wantFits: true, wantLaunch: 2},
		"atomic: the NodePool's limit is too small": {pods: requestPods(12, "1"), pool: pool(test.ResourceList("cpu", "8")),
			launch: true, wantMessage: "do not fit"},
		"atomic: the cluster's limit is too small": {pods: requestPods(8, "1"), pool: pool(nil), clusterLimits: test.ResourceList("cpu", "4"),
			launch: true, wantMessage: "the pods need 2 new node(s)"},
	} {
		t.Run(name, func(t *testing.T) {
			in := simulation.Input{Pods: tc.pods, Nodes: tc.nodes, ClusterLimits: tc.clusterLimits}
			pools := map[string]*karpv1.NodePool{}
			if tc.pool != nil {
				in.NodePools = []*simulation.NodePool{tc.pool}
				pools[tc.pool.NodePool.Name] = tc.pool.NodePool
			}
			v := fit(t.Context(), in, tc.launch, pools)
			if v.fits != tc.wantFits || len(v.launch) != tc.wantLaunch {
				t.Errorf("fit = (fits %t, %d NodeClaims, %q), want (%t, %d)", v.fits, len(v.launch), v.message, tc.wantFits, tc.wantLaunch)
			}
			if !strings.Contains(v.message, tc.wantMessage) {
				t.Errorf("message %q does not contain %q", v.message, tc.wantMessage)
			}
		})
	}
}

// TestHoldBookings: a node booked for another request lends the solve no
// room until that request's pods have landed; one booked for the request
// itself, or not booked, does.
func TestHoldBookings(t *testing.T) {
	booked := func(uid string) *state.StateNode {
		return &state.StateNode{NodeClaim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{RequestUIDLabelKey: uid}, Annotations: map[string]string{BookedAnnotationKey: "true",
				RequestAnnotationKey: "default/other", PodCountAnnotationKey: "2"}}}}
	}
	consumer := func(name, request string) *corev1.Pod {
		pod := test.MakePod(name).Requests("cpu", "1").NodeName("n1").Obj()
		pod.Annotations = map[string]string{autoscalingv1.ConsumeAnnotationKey: request}
		return pod
	}
	for name, tc := range map[string]struct {
		stateNode *state.StateNode
		onNode    []*corev1.Pod
		wantFits  bool
	}{
		"booked for another request": {stateNode: booked("other")},
		"booked for another request, one of its two pods there": {stateNode: booked("other"),
			onNode: []*corev1.Pod{consumer("c1", "other")}},
		"booked for another request, its pods there": {stateNode: booked("other"),
			onNode: []*corev1.Pod{consumer("c1", "other"), consumer("c2", "other")}, wantFits: true},
		"booked for another request, other requests' pods there": {stateNode: booked("other"),
			onNode: []*corev1.Pod{consumer("c1", "third"), consumer("c2", "third")}},
		"booked for this request": {stateNode: booked("self"), wantFits: true},
		"not booked":              {stateNode: &state.StateNode{}, wantFits: true},
	} {
		t.Run(name, func(t *testing.T) {
			nodes := []*simulation.Node{existingNode("n1", "6")}
			nodes[0].Pods = tc.onNode
			holdBookings(nodes, []*state.StateNode{tc.stateNode}, "self")
			v := fit(t.Context(), simulation.Input{Pods: requestPods(2, "1"), Nodes: nodes}, false, nil)
			if v.fits != tc.wantFits {
				t.Errorf("fits = %t (%s), want %t", v.fits, v.message, tc.wantFits)
			}
		})
	}
}
