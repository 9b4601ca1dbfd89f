package provisioning_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestInvalidPodsAreIgnoredWithAnEvent(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	optOut := test.NodeSelectorRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpDoesNotExist)
	pods := h.pendingPods(
		test.MakePod("valid").Requests("cpu", "1").Obj(),
		test.MakePod("pinned").Requests("cpu", "1").NodeSelector(map[string]string{corev1.LabelHostname: "node-1"}).Obj(),
		test.MakePod("restricted").Requests("cpu", "1").
			NodeAffinityTerm(test.NodeSelectorRequirement("karpenter.sh/custom", corev1.NodeSelectorOpIn, "x")).Obj(),
		test.MakePod("opted-out").Requests("cpu", "1").NodeAffinityTerm(optOut).Obj(),
	)
	valid, pinned, restricted, optedOut := pods[0], pods[1], pods[2], pods[3]

	res := h.schedule()

	if len(res.Solve.NodeClaims) != 1 || len(res.Solve.NodeClaims[0].Pods) != 1 || res.Solve.NodeClaims[0].Pods[0].Name != valid.Name {
		t.Fatalf("solved %d NodeClaims, want one holding only the valid pod", len(res.Solve.NodeClaims))
	}
	if len(res.Solve.PodErrors) != 0 {
		t.Errorf("ignored pods reached the solver: %d pod errors", len(res.Solve.PodErrors))
	}
	for pod, want := range map[*corev1.Pod]string{
		pinned:     "ignoring pod, nodeSelector kubernetes.io/hostname: label kubernetes.io/hostname is restricted",
		restricted: "ignoring pod, required node affinity term 0, karpenter.sh/custom: label karpenter.sh/custom is in the restricted domain karpenter.sh",
	} {
		if got := h.eventFor(pod, provisioning.ReasonFailedScheduling); !strings.Contains(got, want) {
			t.Errorf("%s: FailedScheduling %q does not contain %q", pod.Name, got, want)
		}
	}
	// The events above were written; the opted-out pod got none.
	if got := h.base.Events(optedOut); len(got) != 0 {
		t.Errorf("pod that asked for no karp node got events: %+v", got)
	}
	h.eventFor(valid, provisioning.ReasonNominated)
}

func TestNodePoolWithNoCompatibleInstanceTypesIsSkipped(t *testing.T) {
	h := newHarness(t)
	np := h.readyNodePool(test.MakeNodePool("gpu").
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "no-such-type").Obj())
	pod := h.pendingPods(test.MakePod("trainer").Requests("cpu", "1").Obj())[0]

	res := h.schedule()

	if len(res.Created) != 0 {
		t.Fatalf("created %v from a NodePool with no instance type", res.Created)
	}
	got := h.base.EventNote(np, provisioning.ReasonNoCompatibleInstanceTypes)
	if want := "NodePool requirements filtered out all compatible available instance types"; got != want {
		t.Errorf("NodePool event %q, want %q", got, want)
	}
	for _, e := range h.base.Events(np) {
		if e.Reason == provisioning.ReasonNoCompatibleInstanceTypes && e.Type != corev1.EventTypeWarning {
			t.Errorf("event type %s, want Warning", e.Type)
		}
	}
	note := h.eventFor(pod, provisioning.ReasonFailedScheduling)
	for _, want := range []string{"no NodePool can launch nodes",
		"NodePool gpu: skipped: requirements filtered out all compatible available instance types (NoCompatibleInstanceTypes) [NodePoolNotReady]"} {
		if !strings.Contains(note, want) {
			t.Errorf("pod event %q does not contain %q", note, want)
		}
	}
}

func TestSkippedNodePoolIsNamedNextToTheOthers(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Taint(corev1.Taint{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}).Obj())
	// Only spot in test-zone-3 is asked for, and the fake catalog offers
	// spot in zones 1 and 2 only.
	h.readyNodePool(test.MakeNodePool("spot-3").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot).
		Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-zone-3").Obj())
	pod := h.pendingPods(test.MakePod("web").Requests("cpu", "1").Obj())[0]

	res := h.schedule()

	if len(res.Created) != 0 {
		t.Fatalf("created %v, want nothing (the pod does not tolerate default's taint)", res.Created)
	}
	note := h.eventFor(pod, provisioning.ReasonFailedScheduling)
	for _, want := range []string{"NodePool default: ", "dedicated", "NodePool spot-3: skipped: requirements filtered out"} {
		if !strings.Contains(note, want) {
			t.Errorf("pod event %q does not contain %q", note, want)
		}
	}
}

func TestNoCompatibleInstanceTypesIsDeduplicated(t *testing.T) {
	fake := events.NewFakeRecorder(10)
	clk := clocktesting.NewFakeClock(time.Now())
	r := provisioning.NewRecorder(fake, clk)
	np := test.MakeNodePool("gpu").Obj()
	np.UID = "gpu-uid"
	other := test.MakeNodePool("cpu").Obj()
	other.UID = "cpu-uid"

	r.NoCompatibleInstanceTypes(np)
	r.NoCompatibleInstanceTypes(np)
	r.NoCompatibleInstanceTypes(other)
	clk.Step(59 * time.Second)
	r.NoCompatibleInstanceTypes(np)
	if got := drain(fake); len(got) != 2 {
		t.Fatalf("within a minute: %d events %q, want one per NodePool", len(got), got)
	}
	clk.Step(time.Second)
	r.NoCompatibleInstanceTypes(np)
	got := drain(fake)
	if want := "Warning NoCompatibleInstanceTypes NodePool requirements filtered out all compatible available instance types"; len(got) != 1 || got[0] != want {
		t.Errorf("after a minute: %q, want [%q]", got, want)
	}
}

func drain(fake *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-fake.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestNominatedEventsAreRateLimited(t *testing.T) {
	fake := events.NewFakeRecorder(100)
	clk := clocktesting.NewFakeClock(time.Now())
	r := provisioning.NewRecorder(fake, clk)
	var pods []*corev1.Pod
	for i := range 30 {
		pod := test.MakePod(fmt.Sprintf("web-%d", i)).Obj()
		pod.UID = types.UID(pod.Name)
		pods = append(pods, pod)
	}

	for _, pod := range pods {
		r.Nominated(pod, "nodeclaim/default-abc")
	}
	if got := drain(fake); len(got) != 10 {
		t.Fatalf("a burst of 30 nominations wrote %d events, want the burst of 10", len(got))
	}
	// Not rate limited: a pod karp cannot help is always told why.
	r.FailedScheduling(pods[0], "no NodePool can launch nodes")
	if got := drain(fake); len(got) != 1 {
		t.Errorf("FailedScheduling after the Nominated burst: %d events, want 1", len(got))
	}
	// A second later, five more tokens: five of the pods that got no
	// event get one on their next nomination; those told already are
	// deduplicated and spend no token.
	clk.Step(time.Second)
	for _, pod := range pods {
		r.Nominated(pod, "nodeclaim/default-abc")
	}
	got := drain(fake)
	if len(got) != 5 {
		t.Fatalf("a second later: %d events, want 5", len(got))
	}
	if want := "Normal Nominated Pod should schedule on: nodeclaim/default-abc"; got[0] != want {
		t.Errorf("event %q, want %q", got[0], want)
	}
}
