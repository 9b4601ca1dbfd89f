package explain

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/operator"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test"
)

var now = time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)

// cluster is a small cluster: NodePool "default" (Ready, on-demand), a
// managed m5.large node "n1" running pod "web" and NodePool "gpu" with a
// taint.
type cluster struct {
	objs []client.Object
}

func newCluster() *cluster {
	c := &cluster{}
	for _, np := range []*karpv1.NodePool{
		test.MakeNodePool("default").Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
			ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).ConsolidateAfter(karpv1.NewNillableDuration(0)).
			Condition(karpv1.ConditionTypeReady, metav1.ConditionTrue, "Ready", now.Add(-time.Hour)).Obj(),
		test.MakeNodePool("gpu").Taint(corev1.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}).
			Condition(karpv1.ConditionTypeReady, metav1.ConditionTrue, "Ready", now.Add(-time.Hour)).Obj(),
	} {
		c.objs = append(c.objs, np)
	}
	c.node("n1", "default", "m5.large")
	c.pod("web", "n1", "500m")
	return c
}

// node adds an initialized managed node of the instance type.
func (c *cluster) node(name, pool, instanceType string) {
	labels := map[string]string{karpv1.NodePoolLabelKey: pool, corev1.LabelInstanceTypeStable: instanceType,
		corev1.LabelTopologyZone: "us-east-1a", karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand,
		corev1.LabelHostname: name, karpv1.NodeInitializedLabelKey: "true", karpv1.NodeRegisteredLabelKey: "true"}
	nc := test.MakeNodeClaim(name).NodePool(pool).Labels(labels).ProviderID("kwok://"+name).NodeName(name).
		Capacity(test.ResourceList("cpu", "2", "memory", "8Gi", "pods", "29")).
		Allocatable(test.ResourceList("cpu", "1930m", "memory", "7Gi", "pods", "29")).
		Condition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, "Initialized", now.Add(-time.Hour)).Obj()
	nc.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Hour))
	node := test.MakeNode(name).ProviderID("kwok://"+name).Labels(labels).
		Capacity("cpu", "2", "memory", "8Gi", "pods", "29").Allocatable("cpu", "1930m", "memory", "7Gi", "pods", "29").Obj()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	c.objs = append(c.objs, nc, node)
}

// pod adds a running pod on node, or a pending one the scheduler found
// unschedulable when node is "".
func (c *cluster) pod(name, node, cpu string, mutate ...func(*corev1.Pod)) {
	p := test.MakePod(name).Namespace("default").UID("uid-"+name).Labels(map[string]string{"app": name}).Requests("cpu", cpu).Obj()
	if node != "" {
		p.Spec.NodeName = node
		p.Status.Phase = corev1.PodRunning
		p.Status.StartTime = ptr.To(metav1.NewTime(now.Add(-time.Hour)))
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	} else {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}
	}
	for _, m := range mutate {
		m(p)
	}
	c.objs = append(c.objs, p)
}

func (c *cluster) engine(t *testing.T) *Engine {
	t.Helper()
	types, err := kwok.LoadInstanceTypes("", nil)
	if err != nil {
		t.Fatal(err)
	}
	scheme := operator.NewScheme()
	reader, err := NewObjectReader(scheme, c.objs)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(t.Context(), reader, scheme, Options{InstanceTypes: types, Clock: clocktesting.NewFakeClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestPodReasonsPerNodePool(t *testing.T) {
	c := newCluster()
	c.pod("huge", "", "5000")
	r, err := c.engine(t).Pod(t.Context(), "default/huge")
	if err != nil {
		t.Fatal(err)
	}
	if r.Decision != DecisionUnschedulable || r.Code != "UnschedulableAndUnresolvable" {
		t.Fatalf("decision %s %s (%s), want Unschedulable UnschedulableAndUnresolvable", r.Decision, r.Code, r.Message)
	}
	want := map[string]scheduling.ReasonCode{"default": scheduling.ReasonInstanceTypesTooSmall, "gpu": scheduling.ReasonTaintNotTolerated}
	if len(r.Reasons) != len(want) {
		t.Fatalf("reasons %+v, want one per NodePool", r.Reasons)
	}
	for _, why := range r.Reasons {
		if want[why.NodePool] != why.Code {
			t.Errorf("NodePool %s: %s (%s), want %s", why.NodePool, why.Code, why.Message, want[why.NodePool])
		}
	}
	if r.Scheduler == "" {
		t.Error("the kube-scheduler's message is not reported")
	}
}

func TestPodPlacements(t *testing.T) {
	gate := func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}} }
	tests := map[string]struct {
		cpu    string
		mutate []func(*corev1.Pod)
		want   string
	}{
		"fits n1":    {cpu: "500m", want: DecisionExistingNode},
		"needs more": {cpu: "3", want: DecisionNewNodeClaim},
		"gated":      {cpu: "1", mutate: []func(*corev1.Pod){gate}, want: DecisionWaiting},
		// Prefers a zone no NodePool offers: placed, the preference given up.
		"relaxed": {cpu: "3", mutate: []func(*corev1.Pod){preferZone("mars-1a")}, want: DecisionNewNodeClaim},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster()
			c.pod("p", "", tc.cpu, tc.mutate...)
			e := c.engine(t)
			r, err := e.Pod(t.Context(), "p")
			if err != nil {
				t.Fatal(err)
			}
			if r.Decision != tc.want {
				t.Errorf("%s (%s), want %s", r.Decision, r.Message, tc.want)
			}
			if tc.want == DecisionNewNodeClaim && (r.Target == nil || r.Target.NodePool != "default" || r.Target.PricePerHour <= 0) {
				t.Errorf("target %+v, want a priced node of NodePool default", r.Target)
			}
			if got, want := r.PreferencesRelaxed, name == "relaxed"; got != want {
				t.Errorf("preferences relaxed %v, want %v (%s)", got, want, r.Message)
			}
			if tc.want == DecisionExistingNode && (r.Target == nil || r.Target.Node != "n1" || r.Target.NodeClaim != "n1") {
				t.Errorf("target %+v, want node n1", r.Target)
			}
			if r, err := e.Pod(t.Context(), "web"); err != nil || r.Decision != DecisionBound || r.Node != "n1" {
				t.Errorf("web: %+v %v, want bound to n1", r, err)
			}
			if _, err := e.Pod(t.Context(), "default/nope"); err == nil {
				t.Error("explaining a missing pod succeeded")
			}
		})
	}
}

// preferZone gives the pod a preferred node affinity for the zone.
func preferZone(zone string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}
	}
}

func TestNodeBlockers(t *testing.T) {
	tests := map[string]struct {
		mutate func(c *cluster)
		code   string
		check  func(r *NodeReport) string
	}{
		"do-not-disrupt pod": {
			mutate: func(c *cluster) {
				c.pod("keep", "n1", "100m", func(p *corev1.Pod) { p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "3h"} })
			},
			code: disruption.BlockedDoNotDisrupt,
			check: func(r *NodeReport) string {
				if len(r.DoNotDisrupt) != 1 || r.DoNotDisrupt[0].Until == nil || !r.DoNotDisrupt[0].Until.Time.Equal(now.Add(2*time.Hour)) {
					return "want keep protected until two hours from now"
				}
				return ""
			},
		},
		"PDB": {
			mutate: func(c *cluster) {
				c.objs = append(c.objs, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
					Spec:   policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
					Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, ExpectedPods: 1}})
			},
			code: disruption.BlockedPDB,
			check: func(r *NodeReport) string {
				if len(r.PDBs) != 1 || r.PDBs[0].Name != "default/web" || r.PDBs[0].DisruptionsAllowed != 0 {
					return "want PDB default/web allowing 0"
				}
				return ""
			},
		},
		"a DaemonSet pod that does not fit": {
			mutate: func(c *cluster) {
				c.pod("keep", "n1", "100m", func(p *corev1.Pod) { p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"} })
				c.pod("agent-x", "", "4", func(p *corev1.Pod) {
					p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds", Controller: ptr.To(true)}}
					p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
						NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}}}}}
				})
			},
			code: disruption.BlockedDoNotDisrupt,
			check: func(r *NodeReport) string {
				if len(r.DaemonSetPodsPending) != 1 || r.DaemonSetPodsPending[0] != "default/agent-x" {
					return "want default/agent-x named as not running on n1"
				}
				return ""
			},
		},
		"consolidateAfter": {
			mutate: func(c *cluster) {
				np := c.objs[0].(*karpv1.NodePool)
				np.Spec.Disruption.ConsolidateAfter = karpv1.NewNillableDuration(90 * time.Minute)
			},
			code: disruption.BlockedConsolidateAfter,
			check: func(r *NodeReport) string {
				if r.ConsolidateAfterLeft != "30m0s" {
					return "want 30m0s left (pods started an hour ago)"
				}
				return ""
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster()
			tc.mutate(c)
			r, err := c.engine(t).Node(t.Context(), "n1")
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != StatusBlocked || r.Blocked == nil || r.Blocked.Reason != tc.code {
				t.Fatalf("%s: %s, want blocked by %s", r.Status, r.Message, tc.code)
			}
			if msg := tc.check(r); msg != "" {
				t.Errorf("%+v: %s", r, msg)
			}
		})
	}
}

func TestEmptyNodeWouldBeDeletedAndSimulateSaysWhereRemovedPodsGo(t *testing.T) {
	c := newCluster()
	c.node("n2", "default", "m5.large")
	e := c.engine(t)
	r, err := e.Node(t.Context(), "n2")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != StatusWouldDisrupt || r.Next == nil || r.Next.Method != "emptiness" || r.Next.Decision != "delete" || !r.Empty {
		t.Fatalf("n2: %s %s next %+v, want emptiness to delete it", r.Status, r.Message, r.Next)
	}
	rep, err := e.Disruption(t.Context(), DisruptionOptions{Remove: []string{"n1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Commands) == 0 || rep.Commands[0].Method != "emptiness" || strings.Join(rep.Commands[0].Nodes, ",") != "n2" {
		t.Errorf("commands %+v, want emptiness deleting n2 first", rep.Commands)
	}
	if got := rep.Removed.To["default/web"]; got != "n2" {
		t.Errorf("without n1, web goes to %q, want n2", got)
	}
}

func TestNextBudgetChange(t *testing.T) {
	np := test.MakeNodePool("p").Budgets(karpv1.Budget{Nodes: "0", Schedule: ptr.To("0 9 * * *"), Duration: &metav1.Duration{Duration: 3 * time.Hour}}).Obj()
	at, n, ok := nextBudgetChange(np, karpv1.DisruptionReasonDrifted, 10, now) // 10:30, inside 09:00-12:00
	if !ok || !at.Equal(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)) || n < 10 {
		t.Errorf("next change %s to %d (%v), want 12:00 to any number", at, n, ok)
	}
	at, n, ok = nextBudgetChange(np, karpv1.DisruptionReasonDrifted, 10, now.Add(2*time.Hour)) // 12:30
	if !ok || !at.Equal(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)) || n != 0 {
		t.Errorf("next change %s to %d (%v), want 09:00 tomorrow to 0", at, n, ok)
	}
	if _, _, ok := nextBudgetChange(test.MakeNodePool("q").Obj(), karpv1.DisruptionReasonDrifted, 10, now); ok {
		t.Error("a NodePool without schedules has a next change")
	}
	// Edges that change nothing are stepped over: a 2-node window inside
	// a 0-node one opens and closes without changing the allowance; the
	// answer is the outer window's end, as a minute-by-minute scan finds.
	nested := test.MakeNodePool("r").Budgets(
		karpv1.Budget{Nodes: "0", Schedule: ptr.To("0 8 * * *"), Duration: &metav1.Duration{Duration: 8 * time.Hour}},
		karpv1.Budget{Nodes: "2", Schedule: ptr.To("*/15 * * * *"), Duration: &metav1.Duration{Duration: 5 * time.Minute}},
	).Obj()
	at, n, ok = nextBudgetChange(nested, karpv1.DisruptionReasonDrifted, 10, now)
	cur, _ := nested.GetAllowedDisruptionsByReason(now, 10, karpv1.DisruptionReasonDrifted)
	scan := now.Truncate(time.Minute).Add(time.Minute)
	for ; ; scan = scan.Add(time.Minute) {
		if got, _ := nested.GetAllowedDisruptionsByReason(scan, 10, karpv1.DisruptionReasonDrifted); got != cur {
			break
		}
	}
	if !ok || !at.Equal(scan) || !at.Equal(time.Date(2026, 11, 29, 16, 0, 0, 0, time.UTC)) || n != 2 {
		t.Errorf("next change %s to %d (%v), want 16:00 (the scan says %s) to 2", at, n, ok, scan)
	}
}

func TestReadOnly(t *testing.T) {
	ro := readOnly{Reader: &objectReader{}, scheme: operator.NewScheme()}
	ctx := t.Context()
	pod := test.MakePod("p").Obj()
	for name, err := range map[string]error{
		"create": ro.Create(ctx, pod), "update": ro.Update(ctx, pod), "delete": ro.Delete(ctx, pod),
		"patch": ro.Patch(ctx, pod, client.MergeFrom(pod)), "status patch": ro.Status().Patch(ctx, pod, client.MergeFrom(pod)),
	} {
		if !errors.Is(err, errReadOnly) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
}

func TestReadDumpAndJSON(t *testing.T) {
	c := newCluster()
	c.pod("huge", "", "5000")
	var items []map[string]any
	for _, o := range c.objs {
		gvk, err := (readOnly{scheme: operator.NewScheme()}).GroupVersionKindFor(o)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(o)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
		items = append(items, m)
	}
	items = append(items, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}})
	dump, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	scheme := operator.NewScheme()
	objs, warnings, err := ReadDump(scheme, bytes.NewReader(dump), "dump.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != len(c.objs) || len(warnings) != 1 || !strings.Contains(warnings[0], "Widget") {
		t.Fatalf("read %d objects (want %d), warnings %q", len(objs), len(c.objs), warnings)
	}
	reader, _ := NewObjectReader(scheme, objs)
	types, _ := kwok.LoadInstanceTypes("", nil)
	e, err := New(t.Context(), reader, scheme, Options{InstanceTypes: types, Clock: clocktesting.NewFakeClock(now)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Pod(t.Context(), "default/huge")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Write(&out, r, OutputJSON); err != nil {
		t.Fatal(err)
	}
	var back PodReport
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back.Decision != DecisionUnschedulable || len(back.Reasons) != 2 {
		t.Errorf("JSON round trip: %v %+v", err, back)
	}
	out.Reset()
	if err := Write(&out, r, OutputText); err != nil || !strings.Contains(out.String(), string(scheduling.ReasonInstanceTypesTooSmall)) {
		t.Errorf("text output %q (%v) does not name the reason code", out.String(), err)
	}
}
