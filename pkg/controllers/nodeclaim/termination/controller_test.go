package termination_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	nodetermination "github.com/karp-autoscaler/karp/pkg/controllers/node/termination"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/termination"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

var h *operatortest.Harness

func TestMain(m *testing.M) { operatortest.Main(m, &h) }

// registered creates what a registered NodeClaim looks like: an instance
// in the provider, the NodeClaim (with finalizer and status) and its Node
// (with finalizer).
func registered(t *testing.T, cp *fake.CloudProvider, name string) (*karpv1.NodeClaim, *corev1.Node) {
	t.Helper()
	nc := test.MakeNodeClaim(name).NodePool("default").Finalizers(karpv1.TerminationFinalizer).Obj()
	h.Create(t, nc)
	instance, err := cp.Create(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID = instance.Status.ProviderID
	nc.Status.NodeName = name + "-node"
	h.UpdateStatus(t, nc)
	node := test.MakeNode(name + "-node").ProviderID(instance.Status.ProviderID).Obj()
	node.Finalizers = []string{karpv1.TerminationFinalizer}
	h.Create(t, node)
	return nc, node
}

// reconcileUntilGone reconciles until the NodeClaim is gone (or gives up).
// The node termination controller, which drains the NodeClaim's Node and
// releases its finalizer, runs alongside.
func reconcileUntilGone(t *testing.T, c *termination.Controller, cp *fake.CloudProvider, name string) {
	t.Helper()
	nodes := nodetermination.NewController(h.Client, h.APIReader, cp, h.Clock, h.Recorder,
		nodetermination.NewQueue(h.Client, h.Recorder))
	for range 10 {
		if _, err := operatortest.Reconcile(t, h, c, name); err != nil {
			t.Fatalf("reconciling: %v", err)
		}
		if _, err := operatortest.Reconcile(t, h, nodes, name+"-node"); err != nil {
			t.Fatalf("reconciling node: %v", err)
		}
		if !h.Get(t, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}) {
			return
		}
	}
	t.Fatalf("nodeclaim %s still exists after 10 reconciles", name)
}

func nodeExists(t *testing.T, name string) bool {
	t.Helper()
	return h.Get(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

func TestDeletingANodeClaimDeletesItsNodeAndInstance(t *testing.T) {
	h.Reset(t)
	cp := fake.New()
	c := termination.NewController(h.Client, cp, h.Clock, h.Recorder)
	nc, node := registered(t, cp, "bye")
	if err := h.Env.Client.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	reconcileUntilGone(t, c, cp, nc.Name)

	if nodeExists(t, node.Name) {
		t.Error("node still exists")
	}
	if instances, _ := cp.List(t.Context()); len(instances) != 0 {
		t.Errorf("provider still has %d instances", len(instances))
	}
	h.WaitForEvent(t, "NodeClaim", nc.Name, termination.ReasonTerminated)
}

func TestTerminationDurationIsObserved(t *testing.T) {
	h.Reset(t)
	cp := fake.New()
	c := termination.NewController(h.Client, cp, h.Clock, h.Recorder)
	nc, _ := registered(t, cp, "timed")
	count := func() uint64 {
		m := &dto.Metric{}
		if err := termination.TerminationDurationSeconds.WithLabelValues("default").(prometheus.Metric).Write(m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	was := count()
	if err := h.Env.Client.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	reconcileUntilGone(t, c, cp, nc.Name)
	if got := count(); got != was+1 {
		t.Errorf("termination_duration_seconds{nodepool=default} samples = %d, want %d", got, was+1)
	}
}

func TestDeletingTheNodeDeletesTheNodeClaim(t *testing.T) {
	h.Reset(t)
	cp := fake.New()
	c := termination.NewController(h.Client, cp, h.Clock, h.Recorder)
	nc, node := registered(t, cp, "kubectl-delete-node")
	if err := h.Env.Client.Delete(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	if _, err := operatortest.Reconcile(t, h, c, nc.Name); err != nil {
		t.Fatal(err)
	}
	got := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
	if !h.Get(t, got) || got.DeletionTimestamp.IsZero() {
		t.Fatal("nodeclaim not being deleted after its node was")
	}
	reconcileUntilGone(t, c, cp, nc.Name)
	if nodeExists(t, node.Name) {
		t.Error("node still exists")
	}
	if instances, _ := cp.List(t.Context()); len(instances) != 0 {
		t.Errorf("provider still has %d instances", len(instances))
	}
}

func TestUnlaunchedNodeClaimIsReleasedWithoutProviderCalls(t *testing.T) {
	h.Reset(t)
	cp := fake.New()
	c := termination.NewController(h.Client, cp, h.Clock, h.Recorder)
	nc := test.MakeNodeClaim("never").NodePool("default").Finalizers(karpv1.TerminationFinalizer).Obj()
	h.Create(t, nc)
	if err := h.Env.Client.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	reconcileUntilGone(t, c, cp, nc.Name)
	if n := len(cp.DeleteCalls()); n != 0 {
		t.Errorf("Delete called %d times for a NodeClaim that never launched", n)
	}
}

func TestProviderDeleteFailureKeepsTheFinalizer(t *testing.T) {
	h.Reset(t)
	cp := fake.New()
	c := termination.NewController(h.Client, cp, h.Clock, h.Recorder)
	nc, _ := registered(t, cp, "stuck")
	if err := h.Env.Client.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	cp.SetNextDeleteError(errors.New("cloud API down"))
	// Whichever controller asks first (the Node's, once drained), the
	// failure surfaces as a reconcile error.
	nodes := nodetermination.NewController(h.Client, h.APIReader, cp, h.Clock, h.Recorder,
		nodetermination.NewQueue(h.Client, h.Recorder))
	var lastErr error
	for range 5 {
		if _, lastErr = operatortest.Reconcile(t, h, c, nc.Name); lastErr != nil {
			break
		}
		if _, lastErr = operatortest.Reconcile(t, h, nodes, nc.Name+"-node"); lastErr != nil {
			break
		}
	}
	if lastErr == nil || !strings.Contains(lastErr.Error(), "cloud API down") {
		t.Fatalf("reconcile error = %v, want the provider's Delete error", lastErr)
	}
	got := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
	if !h.Get(t, got) {
		t.Fatal("nodeclaim released while its instance could not be deleted")
	}
	if instances, _ := cp.List(t.Context()); len(instances) != 1 {
		t.Errorf("provider has %d instances, want the 1 that failed to delete", len(instances))
	}
	// The cloud recovers: the next pass finishes the job.
	reconcileUntilGone(t, c, cp, nc.Name)
	if instances, _ := cp.List(t.Context()); len(instances) != 0 {
		t.Errorf("provider still has %d instances", len(instances))
	}
}

func TestDeletionStampsTheTerminationDeadline(t *testing.T) {
	h.Reset(t)
	cp := fake.New()
	c := termination.NewController(h.Client, cp, h.Clock, h.Recorder)
	// A second finalizer keeps the NodeClaim readable after karp lets go.
	nc := test.MakeNodeClaim("deadline").NodePool("default").Finalizers(karpv1.TerminationFinalizer, "test.karp.sh/hold").
		TerminationGracePeriod(time.Hour).Obj()
	h.Create(t, nc)
	if err := h.Env.Client.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	if _, err := operatortest.Reconcile(t, h, c, nc.Name); err != nil {
		t.Fatal(err)
	}
	got := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
	if !h.Get(t, got) {
		t.Fatal("nodeclaim gone despite the extra finalizer")
	}
	want := got.DeletionTimestamp.Add(time.Hour).UTC().Format(time.RFC3339)
	if v := got.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; v != want {
		t.Errorf("termination timestamp = %q, want deletion + terminationGracePeriod = %q", v, want)
	}
	h.WaitForEvent(t, "NodeClaim", nc.Name, termination.ReasonTerminationGracePeriodExpiring)
}
