package badinput_test

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/controllers"
	"github.com/karp-autoscaler/karp/pkg/operator"
	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
	"github.com/karp-autoscaler/karp/test/e2e/chaos/badinput"
)

var env *environment.Environment

func TestMain(m *testing.M) { environment.Main(m, &env) }

// startKarp runs the whole karp controller (core controllers, kwok
// provider) in process against the API server until the test ends.
func startKarp(t *testing.T, cfg *rest.Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	opts, err := options.Parse(flag.NewFlagSet("karp", flag.ContinueOnError), []string{
		"--cloud-provider=kwok", "--disable-leader-election", "--metrics-port=0", "--health-probe-port=0",
		"--batch-idle-duration=100ms", "--batch-max-duration=1s",
		"--disruption-poll-period=1s", "--disruption-validation-delay=1s",
	})
	if err != nil {
		t.Fatal(err)
	}
	op, err := operator.New(ctx, cfg, opts, operator.WithoutControllerNameValidation())
	if err != nil {
		t.Fatal(err)
	}
	provider, err := operator.NewCloudProvider(ctx, opts, op, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Register(ctx, append(controllers.NewControllers(op.Deps(provider.CloudProvider)), provider.Controllers...)...); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- op.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("karp stopped: %v", err)
		}
		provider.Close()
	})
}

// workloadPool creates an untainted NodePool and its KWOKNodeClass, as
// the chaos suite's own pools are: the pools bad pods are weighed against.
// They are deleted when the test ends.
func workloadPool(t *testing.T, cl client.Client, name string) {
	t.Helper()
	objs := []client.Object{test.MakeKWOKNodeClass(name).Obj(),
		test.MakeNodePool(name).NodeClassRef(kwokv1alpha1.NodeClassReference(name)).Obj()}
	for _, obj := range objs {
		if err := cl.Create(t.Context(), obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := cl.Delete(context.WithoutCancel(t.Context()), obj); client.IgnoreNotFound(err) != nil {
				t.Errorf("deleting %s: %v", obj.GetName(), err)
			}
		})
	}
}

func namespace(t *testing.T, cl client.Client, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := cl.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return name
}

// markUnschedulable does the kube-scheduler's part (there is none here):
// every pod of the namespace gets PodScheduled=False/Unschedulable, which
// is what makes karp look at it.
func markUnschedulable(t *testing.T, ns string) {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		pod := &pods.Items[i]
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/0 nodes are available"}}
		if err := env.Client.Status().Update(t.Context(), pod); err != nil {
			t.Fatalf("marking pod %s unschedulable: %v", pod.Name, err)
		}
	}
}

// TestEveryCaseGetsItsOutcome applies every case but those whose pods
// must run (no kube-scheduler or kwok here to run them; see
// TestEveryCaseOnALocalCluster) with karp running in process, and waits
// for each: rejections at once, karp's events, conditions and annotations
// within a minute; then nothing bad input asked for was launched, and
// Cleanup removes what was accepted.
func TestEveryCaseGetsItsOutcome(t *testing.T) {
	startKarp(t, env.Config)
	workloadPool(t, env.Client, "workload")
	ns := namespace(t, env.Client, "badinput")
	var cases []badinput.Case
	for _, c := range badinput.Cases() {
		if !c.Runs {
			cases = append(cases, c)
		}
	}
	if len(cases) == len(badinput.Cases()) {
		t.Fatal("no case runs its pod: TestEveryCaseOnALocalCluster has nothing of its own")
	}
	results := badinput.RunCases(t.Context(), env.Client, ns, cases)
	markUnschedulable(t, ns)
	verifyAndCleanUp(t, env.Client, ns, results, time.Minute)
}

// verifyAndCleanUp checks every result within timeout, logs karp's
// answers, and deletes what the cases created.
func verifyAndCleanUp(t *testing.T, cl client.Client, ns string, results []badinput.Result, timeout time.Duration) {
	t.Helper()
	for _, r := range results {
		if r.Err != nil {
			t.Errorf("%s", r)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	if err := badinput.Verify(ctx, cl, results); err != nil {
		t.Errorf("verify:\n%v", err)
	}
	for _, r := range results {
		t.Log(r)
	}

	ctx, cancel = context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := badinput.Cleanup(ctx, cl, results); err != nil {
		t.Errorf("cleanup: %v", err)
	}
	var pods corev1.PodList
	if err := cl.List(t.Context(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods left after Cleanup", len(pods.Items))
	}
}

// TestCasesCoverEachKindOfBadInput keeps the list honest: every case has
// exactly one outcome and a unique name, and each kind of bad input the
// chaos suite promises is there.
func TestCasesCoverEachKindOfBadInput(t *testing.T) {
	names := map[string]bool{}
	for _, c := range badinput.Cases() {
		if names[c.Name] {
			t.Errorf("case %s twice", c.Name)
		}
		names[c.Name] = true
		n := 0
		for _, set := range []bool{c.Rejection != nil, c.Event != nil, c.Condition != nil, c.Annotation != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			t.Errorf("case %s has %d outcomes, want exactly one", c.Name, n)
		}
	}
	for _, prefix := range []string{"nodepool-", "kwoknodeclass-", "ec2nodeclass-", "pod-"} {
		found := false
		for name := range names {
			found = found || strings.HasPrefix(name, prefix)
		}
		if !found {
			t.Errorf("no %s case", prefix)
		}
	}
}

// TestVerifyFailsOnAWrongExpectation shows the checks can fail: a case
// whose expected field, event note or condition reason is wrong is
// reported with what karp actually said.
func TestVerifyFailsOnAWrongExpectation(t *testing.T) {
	startKarp(t, env.Config)
	workloadPool(t, env.Client, "workload-wrong")
	ns := namespace(t, env.Client, "badinput-wrong")
	cases := map[string]badinput.Case{}
	for _, c := range badinput.Cases() {
		cases[c.Name] = c
	}
	wrongField := cases["nodepool-unknown-operator"]
	wrongField.Rejection = &badinput.Rejection{Field: "spec.weight", Message: wrongField.Rejection.Message}
	wrongReason := cases["nodepool-missing-nodeclass"]
	cond := *wrongReason.Condition
	cond.Reason = "SomethingElse"
	wrongReason.Condition = &cond
	wrongNote := cases["pod-absurd-requests"]
	ev := *wrongNote.Event
	ev.Note = []string{"a note karp never writes"}
	wrongNote.Event = &ev

	// A pod that is not bad at all: karp launches a node for it, which
	// Verify reports as bad input disturbing the cluster.
	notBad := badinput.Case{
		Name: "pod-not-bad",
		Object: func(ns string) client.Object {
			pod := test.MakePod(badinput.Prefix+"fits").Namespace(ns).Requests("cpu", "100m").Obj()
			pod.UID, pod.Status = "", corev1.PodStatus{}
			return pod
		},
		Event: wrongNote.Event,
	}

	results := badinput.RunCases(t.Context(), env.Client, ns, []badinput.Case{wrongField, wrongReason, wrongNote, notBad})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), time.Minute)
		defer cancel()
		if err := badinput.Cleanup(ctx, env.Client, results); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	markUnschedulable(t, ns)
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	err := badinput.Verify(ctx, env.Client, results)
	if err == nil {
		t.Fatal("Verify passed wrong expectations")
	}
	for _, want := range []string{
		"nodepool-unknown-operator: rejected with", "want a cause on spec.weight",
		"nodepool-missing-nodeclass: condition NodeClassReady is False/NodeClassNotFound",
		"pod-absurd-requests: no Warning FailedScheduling event from karp", "a note karp never writes",
		"bad input's pod badinput-fits was nominated: Pod should schedule on: nodeclaim/workload-wrong-",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Verify error does not contain %q:\n%v", want, err)
		}
	}
}
