package consistency_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/consistency"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// launched creates an initialized NodeClaim that expected 16Gi of memory
// for its pods, and its Node reporting nodeMemory.
func launched(t *testing.T, name, nodeMemory string) (*karpv1.NodeClaim, *corev1.Node) {
	t.Helper()
	nc := test.MakeNodeClaim(name).Finalizers(karpv1.TerminationFinalizer).
		Requests(corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}).Obj()
	h.Create(t, nc)
	nc.Status.ProviderID = "fake://" + name
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue,
		Reason: "Initialized", LastTransitionTime: metav1.NewTime(h.Clock.Now())}}
	h.UpdateStatus(t, nc)
	node := test.MakeNode(name).ProviderID(nc.Status.ProviderID).Obj()
	h.Create(t, node)
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(nodeMemory)}
	h.UpdateStatus(t, node)
	return nc, node
}

// notes returns the notes of the events with reason about the NodeClaim.
func notes(t *testing.T, name, reason string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := h.Env.Client.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "NodeClaim" && e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

func waitForNote(t *testing.T, name, note string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return slices.Contains(notes(t, name, consistency.ReasonFailedConsistencyCheck), note), nil
	})
	if err != nil {
		t.Fatalf("no FailedConsistencyCheck event %q on %s (have %q)", note, name, notes(t, name, consistency.ReasonFailedConsistencyCheck))
	}
}

func consistentState(t *testing.T, name string) *metav1.Condition {
	t.Helper()
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if !h.Get(t, nc) {
		t.Fatalf("nodeclaim %s is gone", name)
	}
	return nc.StatusConditions().Get(karpv1.ConditionTypeConsistentStateFound)
}

// A Node that came up with half the memory its NodeClaim expected is
// reported on the NodeClaim and marks it inconsistent; it is checked again
// only after the scan period, and found consistent once the Node reports
// the memory.
func TestShortNodeIsReported(t *testing.T) {
	h.Reset(t)
	c := consistency.NewController(h.Client, fake.New(), h.Clock, h.Recorder)
	nc, node := launched(t, "short", "8Gi")

	res, err := operatortest.Reconcile(t, h, c, nc.Name)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != consistency.ScanPeriod {
		t.Errorf("RequeueAfter = %s, want the scan period", res.RequeueAfter)
	}
	waitForNote(t, nc.Name, "expected 16Gi of resource memory, but found 8Gi (50.0% of expected)")
	cond := consistentState(t, nc.Name)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != "ConsistencyCheckFailed" || cond.Message != "Consistency Check Failed" {
		t.Fatalf("ConsistentStateFound = %+v, want False ConsistencyCheckFailed", cond)
	}

	// The Node now reports its memory; within the period nothing is checked.
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Gi")}
	h.UpdateStatus(t, node)
	h.Clock.Step(time.Minute)
	res, err = operatortest.Reconcile(t, h, c, nc.Name)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != consistency.ScanPeriod-time.Minute {
		t.Errorf("RequeueAfter = %s within the period, want the %s left", res.RequeueAfter, consistency.ScanPeriod-time.Minute)
	}
	if cond := consistentState(t, nc.Name); cond.Status != metav1.ConditionFalse {
		t.Errorf("ConsistentStateFound = %s before the next scan, want it unchanged", cond.Status)
	}
	h.Clock.Step(consistency.ScanPeriod - time.Minute)
	if _, err := operatortest.Reconcile(t, h, c, nc.Name); err != nil {
		t.Fatal(err)
	}
	if cond := consistentState(t, nc.Name); cond.Status != metav1.ConditionTrue {
		t.Errorf("ConsistentStateFound = %s after the Node reported its memory, want True", cond.Status)
	}
}

// A deleting NodeClaim whose Node holds a pod under a budget that allows
// no disruption is reported as held by that budget.
func TestDrainHeldByABudgetIsReported(t *testing.T) {
	h.Reset(t)
	t.Cleanup(func() {
		for _, obj := range []client.Object{&corev1.Pod{}, &policyv1.PodDisruptionBudget{}} {
			_ = h.Env.Client.DeleteAllOf(context.WithoutCancel(t.Context()), obj, client.InNamespace("default"), client.GracePeriodSeconds(0))
		}
	})
	c := consistency.NewController(h.Client, fake.New(), h.Clock, h.Recorder)
	nc, node := launched(t, "held", "16Gi")
	h.Create(t, test.MakePod("web-0").NodeName(node.Name).Label("app", "web").Obj())
	// No disruption controller runs here: the budget's status stays at
	// zero disruptions allowed.
	minAvailable := intstr.FromInt32(1)
	h.Create(t, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minAvailable,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}})
	if err := h.Env.Client.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}

	if _, err := operatortest.Reconcile(t, h, c, nc.Name); err != nil {
		t.Fatal(err)
	}
	waitForNote(t, nc.Name, `can't drain node, PDB "default/web" is blocking evictions`)
	if cond := consistentState(t, nc.Name); cond == nil || cond.Status != metav1.ConditionFalse {
		t.Errorf("ConsistentStateFound = %+v, want False", cond)
	}
}

// A NodeClaim not launched yet, without a Node, or not initialized yet is
// not checked.
func TestNodeClaimWithoutANodeIsNotChecked(t *testing.T) {
	h.Reset(t)
	c := consistency.NewController(h.Client, fake.New(), h.Clock, h.Recorder)
	h.Create(t, test.MakeNodeClaim("pending").Obj())
	nc := test.MakeNodeClaim("unregistered").Obj()
	h.Create(t, nc)
	nc.Status.ProviderID = "fake://unregistered"
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue,
		Reason: "Initialized", LastTransitionTime: metav1.NewTime(h.Clock.Now())}}
	h.UpdateStatus(t, nc)
	starting := test.MakeNodeClaim("starting").Obj()
	h.Create(t, starting)
	starting.Status.ProviderID = "fake://starting"
	h.UpdateStatus(t, starting)
	h.Create(t, test.MakeNode("starting").ProviderID(starting.Status.ProviderID).Obj())
	for _, name := range []string{"pending", "unregistered", "starting"} {
		res, err := operatortest.Reconcile(t, h, c, name)
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != 0 {
			t.Errorf("%s: RequeueAfter = %s, want none (the Node's arrival brings it back)", name, res.RequeueAfter)
		}
		if cond := consistentState(t, name); cond != nil {
			t.Errorf("%s: ConsistentStateFound = %+v, want unset", name, cond)
		}
	}
}

// The issues of one check share one event (the events API would merge a
// second event about the same NodeClaim into the first).
func TestIssuesOfOneCheckShareAnEvent(t *testing.T) {
	h.Reset(t)
	c := consistency.NewController(h.Client, fake.New(), h.Clock, h.Recorder)
	nc := test.MakeNodeClaim("small").Requests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"),
		corev1.ResourceMemory: resource.MustParse("1Gi")}).Obj()
	h.Create(t, nc)
	nc.Status.ProviderID = "fake://small"
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	nc.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue,
		Reason: "Initialized", LastTransitionTime: metav1.NewTime(h.Clock.Now())}}
	h.UpdateStatus(t, nc)
	node := test.MakeNode("small").ProviderID(nc.Status.ProviderID).Obj()
	h.Create(t, node)
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	h.UpdateStatus(t, node)

	if _, err := operatortest.Reconcile(t, h, c, nc.Name); err != nil {
		t.Fatal(err)
	}
	waitForNote(t, nc.Name, "expected 4 of resource cpu, but found 2 (50.0% of expected); "+
		"expected 16Gi of resource memory, but found 8Gi (50.0% of expected)")
}

// A status write that fails (a conflict with the lifecycle's writes) leaves
// the NodeClaim due: the retry checks again and records the outcome
// instead of waiting out the scan period.
func TestFailedWriteIsRetriedAtOnce(t *testing.T) {
	h.Reset(t)
	conflicts := 1
	flaky := interceptor.NewClient(noWatch{h.Client}, interceptor.Funcs{
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if conflicts > 0 {
				conflicts--
				return apierrors.NewConflict(schema.GroupResource{Group: karpv1.Group, Resource: "nodeclaims"}, obj.GetName(), errors.New("modified"))
			}
			return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	})
	c := consistency.NewController(flaky, fake.New(), h.Clock, h.Recorder)
	nc, _ := launched(t, "retried", "16Gi")
	if _, err := operatortest.Reconcile(t, h, c, nc.Name); !apierrors.IsConflict(err) {
		t.Fatalf("first reconcile: %v, want the conflict", err)
	}
	res, err := operatortest.Reconcile(t, h, c, nc.Name)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter != consistency.ScanPeriod {
		t.Errorf("RequeueAfter = %s, want a full scan period after the written check", res.RequeueAfter)
	}
	if cond := consistentState(t, nc.Name); cond == nil || cond.Status != metav1.ConditionTrue {
		t.Errorf("ConsistentStateFound = %+v after the retry, want True", cond)
	}
}

// noWatch lets interceptor.NewClient wrap a client.Client.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported")
}
