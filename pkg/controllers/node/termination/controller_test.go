package termination

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

var h *operatortest.Harness

func TestMain(m *testing.M) { operatortest.Main(m, &h) }

// fixture is one test's controller, eviction queue and provider.
type fixture struct {
	c         *Controller
	queue     *Queue
	stopQueue func()
	cp        *fake.CloudProvider
	// ignoreRolloutBudgets builds the queue as --respect-rollout-budget=false
	// does (the default respects them, as production does).
	ignoreRolloutBudgets bool
}

// setup resets the cluster and starts a controller whose eviction queue
// runs until the test ends.
func setup(t *testing.T) *fixture {
	t.Helper()
	h.Reset(t)
	resetPods(t)
	cp := fake.New()
	f := &fixture{cp: cp}
	f.restart(t)
	return f
}

// restart replaces the controller and its queue by new ones, as a new
// controller process would (the old queue stops).
func (f *fixture) restart(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	q := NewQueue(h.Client, h.Recorder)
	if !f.ignoreRolloutBudgets {
		q = q.WithRolloutBudgets(h.Client)
	}
	done := make(chan struct{})
	go func() { _ = q.Start(ctx); close(done) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	if f.queue != nil {
		f.stopQueue()
	}
	f.stopQueue = stop
	f.queue = q
	f.c = NewController(h.Client, h.APIReader, f.cp, h.Clock, h.Recorder, q)
}

func resetPods(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	for _, obj := range []client.Object{&corev1.Pod{}, &policyv1.PodDisruptionBudget{}} {
		if err := h.Env.Client.DeleteAllOf(ctx, obj, client.InNamespace("default"), client.GracePeriodSeconds(0)); err != nil {
			t.Fatalf("deleting %T: %v", obj, err)
		}
	}
	if err := h.Env.Client.DeleteAllOf(ctx, &storagev1.VolumeAttachment{}); err != nil {
		t.Fatalf("deleting volume attachments: %v", err)
	}
}

// managedNode creates a registered NodeClaim, its instance and its Node
// (both with karp's finalizer), and sets the fake clock to the API
// server's time so pods' deletion timestamps compare with it.
func managedNode(t *testing.T, f *fixture, name string, annotations map[string]string) (*karpv1.NodeClaim, *corev1.Node) {
	t.Helper()
	nc := test.MakeNodeClaim(name).NodePool("default").Finalizers(karpv1.TerminationFinalizer).Annotations(annotations).Obj()
	h.Create(t, nc)
	instance, err := f.cp.Create(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID = instance.Status.ProviderID
	nc.Status.NodeName = name
	h.UpdateStatus(t, nc)
	node := test.MakeNode(name).ProviderID(instance.Status.ProviderID).Obj()
	node.Finalizers = []string{karpv1.TerminationFinalizer}
	h.Create(t, node)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	h.UpdateStatus(t, node)
	h.Clock.SetTime(node.CreationTimestamp.Time)
	return nc, node
}

// podOn creates a running, ready pod bound to node; by default it goes
// away as soon as it is deleted (terminationGracePeriodSeconds 0).
func podOn(t *testing.T, node, name string, opts ...podOpt) *corev1.Pod {
	t.Helper()
	pod := test.MakePod(name).NodeName(node).Label("app", name).Obj()
	pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	for _, o := range opts {
		o(pod)
	}
	status := pod.Status
	h.Create(t, pod)
	pod.Status = status
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if pod.Status.StartTime == nil {
		pod.Status.StartTime = &metav1.Time{Time: h.Clock.Now()}
	}
	h.UpdateStatus(t, pod)
	return pod
}

// blockingPDB creates a PDB over the pods labelled app=app whose status
// (normally the disruption controller's) allows `allowed` disruptions.
func blockingPDB(t *testing.T, app string, allowed int32) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
	h.Create(t, pdb)
	setPDBAllowed(t, pdb, allowed)
	return pdb
}

func setPDBAllowed(t *testing.T, pdb *policyv1.PodDisruptionBudget, allowed int32) {
	t.Helper()
	if !h.Get(t, pdb) {
		t.Fatalf("pdb %s is gone", pdb.Name)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
		CurrentHealthy: 1 + allowed, DesiredHealthy: 1, ExpectedPods: 1 + allowed}
	h.UpdateStatus(t, pdb)
}

func deleteNode(t *testing.T, node *corev1.Node) {
	t.Helper()
	if err := h.Env.Client.Delete(t.Context(), node); err != nil {
		t.Fatal(err)
	}
}

// reconcile runs one pass; a conflict (another writer touched the
// NodeClaim or Node in between) is retried, as the manager would.
func (f *fixture) reconcile(t *testing.T, node string) {
	t.Helper()
	for range 5 {
		_, err := operatortest.Reconcile(t, h, f.c, node)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			t.Fatalf("reconciling node %s: %v", node, err)
		}
	}
	t.Fatalf("reconciling node %s: conflicts on every try", node)
}

// reconcileUntil reconciles the node until cond holds (the eviction queue
// works in between), failing after 30 s.
func (f *fixture) reconcileUntil(t *testing.T, node, what string, cond func() bool) {
	t.Helper()
	for range 300 {
		f.reconcile(t, node)
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out waiting until %s", what)
}

// passes reconciles the node n times, 100 ms apart, so the queue gets
// several tries. Only the eviction backoff check uses it, to count the
// tries against the passes; a test that asserts nothing happened waits for
// the sync point that shows the controller tried (eventSeen,
// evictionRequests) instead.
func (f *fixture) passes(t *testing.T, node string, n int) {
	t.Helper()
	for range n {
		f.reconcile(t, node)
		time.Sleep(100 * time.Millisecond)
	}
}

// eventSeen reports whether kind/name has an event with reason: the sync
// point that the controller reached a decision and was turned down.
func eventSeen(t *testing.T, kind, name, reason string) func() bool {
	return func() bool { return slices.Contains(h.EventReasons(t, kind, name), reason) }
}

// evictionRequests is karpenter_pods_eviction_requests_total for the
// response code: the count grows once the queue has tried a request and
// heard back.
func evictionRequests(code string) float64 {
	return testutil.ToFloat64(podsEvictionRequestsTotal.WithLabelValues(code))
}

func gone(t *testing.T, obj client.Object) func() bool {
	return func() bool { return !h.Get(t, obj.DeepCopyObject().(client.Object)) }
}

func exists(t *testing.T, obj client.Object) bool {
	t.Helper()
	return h.Get(t, obj.DeepCopyObject().(client.Object))
}

// observations sums the sample counts of a summary or histogram vector.
func observations(t *testing.T, c prometheus.Collector) uint64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	var n uint64
	for m := range ch {
		var out dto.Metric
		if err := m.Write(&out); err != nil {
			t.Fatal(err)
		}
		if out.Summary != nil {
			n += out.Summary.GetSampleCount()
		}
		if out.Histogram != nil {
			n += out.Histogram.GetSampleCount()
		}
	}
	return n
}

func nodeClaimCondition(t *testing.T, name, condType string) *metav1.Condition {
	t.Helper()
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if !h.Get(t, nc) {
		t.Fatalf("nodeclaim %s is gone", name)
	}
	return nc.StatusConditions().Get(condType)
}

func TestDrainEvictsPodsThenDeletesTheInstanceAndReleasesTheNode(t *testing.T) {
	f := setup(t)
	nc, node := managedNode(t, f, "drain", nil)
	a, b := podOn(t, node.Name, "a"), podOn(t, node.Name, "b")
	evictedBefore := testutil.ToFloat64(podsDrainedTotal.WithLabelValues(""))
	terminatedBefore := testutil.ToFloat64(metrics.NodesTerminatedTotal.WithLabelValues("default", ""))
	drainedBefore := testutil.ToFloat64(nodesDrainedTotal.WithLabelValues("default"))
	durationsBefore, lifetimesBefore := observations(t, nodesTerminationDurationSeconds), observations(t, nodesLifetimeDurationSeconds)
	deleteNode(t, node)

	f.reconcile(t, node.Name)
	got := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
	if !h.Get(t, got) || !hasDisruptedTaint(got) || got.Labels[karpv1.NodeExcludeFromLoadBalancersLabelKey] != "karpenter" {
		t.Fatalf("deleting node not tainted %s and labelled %s: %+v", karpv1.DisruptedTaintKey,
			karpv1.NodeExcludeFromLoadBalancersLabelKey, got.Spec.Taints)
	}
	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))

	if exists(t, a) || exists(t, b) {
		t.Error("pods still exist after the drain")
	}
	if n := testutil.ToFloat64(podsDrainedTotal.WithLabelValues("")) - evictedBefore; n != 2 {
		t.Errorf("karpenter_pods_drained_total grew by %v, want 2", n)
	}
	if instances, _ := f.cp.List(t.Context()); len(instances) != 0 {
		t.Errorf("provider still has %d instances", len(instances))
	}
	for metric, grew := range map[string]float64{
		"karpenter_nodes_terminated_total":             testutil.ToFloat64(metrics.NodesTerminatedTotal.WithLabelValues("default", "")) - terminatedBefore,
		"karpenter_nodes_drained_total":                testutil.ToFloat64(nodesDrainedTotal.WithLabelValues("default")) - drainedBefore,
		"karpenter_nodes_termination_duration_seconds": float64(observations(t, nodesTerminationDurationSeconds) - durationsBefore),
		"karpenter_nodes_lifetime_duration_seconds":    float64(observations(t, nodesLifetimeDurationSeconds) - lifetimesBefore),
	} {
		if grew != 1 {
			t.Errorf("%s grew by %v, want 1", metric, grew)
		}
	}
	for _, cond := range []string{karpv1.ConditionTypeDrained, karpv1.ConditionTypeVolumesDetached} {
		if c := nodeClaimCondition(t, nc.Name, cond); c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("condition %s = %+v, want True", cond, c)
		}
	}
	h.WaitForEvent(t, "Pod", a.Name, ReasonEvicted)
	// The NodeClaim is deleted with its Node.
	gotNC := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
	if h.Get(t, gotNC) && gotNC.DeletionTimestamp.IsZero() {
		t.Error("nodeclaim not deleted along with its node")
	}
}

func TestAPDBAllowingNoDisruptionBlocksTheEvictionUntilItAllowsOne(t *testing.T) {
	f := setup(t)
	_, node := managedNode(t, f, "pdb", nil)
	pod := podOn(t, node.Name, "guarded")
	pdb := blockingPDB(t, "guarded", 0)
	refusedBefore := evictionRequests("429")
	refused := func() float64 { return evictionRequests("429") - refusedBefore }
	deleteNode(t, node)

	// Sync point: the eviction was refused, and refused again after its
	// backoff.
	f.reconcileUntil(t, node.Name, "the refused eviction is retried", func() bool { return refused() >= 2 })
	got := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: pod.Name}}
	if !h.Get(t, got) || got.DeletionTimestamp != nil {
		t.Fatal("pod evicted or deleted while its PDB allowed no disruption")
	}
	if !exists(t, node) {
		t.Fatal("node released while a pod was still on it")
	}
	// Retried with exponential backoff: far fewer tries than drain passes,
	// though every pass queues the pod again. The tries grow with the log
	// of the time the passes take, so a slow machine stays far below the
	// bound (it would take half an hour of passes to reach it).
	const passes = 30
	f.passes(t, node.Name, passes)
	if n := refused(); n < 2 || n > passes/2 {
		t.Errorf("%v refused evictions in %d drain passes, want the 429 retried with backoff", n, passes)
	}
	h.WaitForEvent(t, "Pod", pod.Name, ReasonFailedDraining)
	if c := nodeClaimCondition(t, "pdb", karpv1.ConditionTypeDrained); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Drained = %+v, want False while draining", c)
	}
	if len(f.cp.DeleteCalls()) != 0 {
		t.Error("instance deleted before the drain finished")
	}

	setPDBAllowed(t, pdb, 1)
	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
	if exists(t, pod) {
		t.Error("pod still exists")
	}
}

func TestPodsLeaveGroupByGroup(t *testing.T) {
	f := setup(t)
	_, node := managedNode(t, f, "order", nil)
	ds := test.MakeDaemonSet("ds").Obj()
	h.Create(t, ds)
	t.Cleanup(func() { _ = h.Env.Client.Delete(context.WithoutCancel(t.Context()), ds) })
	owned := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}
	}
	crit := func(p *corev1.Pod) { p.Spec.PriorityClassName = "system-cluster-critical" }
	pods := []*corev1.Pod{
		podOn(t, node.Name, "workload"), podOn(t, node.Name, "daemon", owned),
		podOn(t, node.Name, "critical", crit), podOn(t, node.Name, "critical-daemon", crit, owned),
	}
	// Each group is held by a PDB allowing nothing, released in turn.
	pdbs := make([]*policyv1.PodDisruptionBudget, len(pods))
	for i, pod := range pods {
		pdbs[i] = blockingPDB(t, pod.Name, 0)
	}
	deleteNode(t, node)
	for i := range pods {
		// Sync point: the current group's eviction was tried and refused.
		f.reconcileUntil(t, node.Name, pods[i].Name+"'s eviction is refused", eventSeen(t, "Pod", pods[i].Name, ReasonFailedDraining))
		for j := i; j < len(pods); j++ {
			if !exists(t, pods[j]) {
				t.Fatalf("%s left before %s", pods[j].Name, pods[i].Name)
			}
		}
		if i > 0 {
			// Only the current group was asked: the later ones saw no eviction.
			for j := i + 1; j < len(pods); j++ {
				if reasons := h.EventReasons(t, "Pod", pods[j].Name); len(reasons) > 0 {
					t.Errorf("%s got %v while %s was still on the node", pods[j].Name, reasons, pods[i].Name)
				}
			}
		}
		setPDBAllowed(t, pdbs[i], 1)
		f.reconcileUntil(t, node.Name, pods[i].Name+" is evicted", gone(t, pods[i]))
	}
	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
}

func TestAPodUnderTwoPDBsIsRetriedUntilOneGoes(t *testing.T) {
	f := setup(t)
	_, node := managedNode(t, f, "two-pdbs", nil)
	pod := podOn(t, node.Name, "doubly")
	blockingPDB(t, "doubly", 1)
	second := blockingPDB(t, "doubly-too", 1)
	second.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "doubly"}}
	if err := h.Env.Client.Update(t.Context(), second); err != nil {
		t.Fatal(err)
	}
	setPDBAllowed(t, second, 1)
	deleteNode(t, node)

	f.reconcileUntil(t, node.Name, "the eviction is refused", eventSeen(t, "Pod", pod.Name, ReasonFailedDraining))
	if !exists(t, pod) {
		t.Fatal("pod evicted although two PDBs select it (the API refuses such evictions)")
	}
	// The user fixes the budgets: the retried eviction goes through.
	if err := h.Env.Client.Delete(t.Context(), second); err != nil {
		t.Fatal(err)
	}
	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
	if exists(t, pod) {
		t.Error("pod still exists")
	}
}

func TestPodsToleratingTheDisruptedTaintAreLeftAlone(t *testing.T) {
	f := setup(t)
	_, node := managedNode(t, f, "tolerated", nil)
	stays := podOn(t, node.Name, "stays", func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}}
	})
	leaves := podOn(t, node.Name, "leaves")
	deleteNode(t, node)
	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
	if exists(t, leaves) {
		t.Error("pod without the toleration still exists")
	}
	got := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: stays.Name}}
	if !h.Get(t, got) || got.DeletionTimestamp != nil {
		t.Error("pod tolerating the disrupted taint was evicted")
	}
}

// TestAnInvalidDoNotDisruptAnnotationIsNamedWhenThePodIsEvicted: a pod
// whose karpenter.sh/do-not-disrupt value protects nothing is evicted like
// any other, and the pod gets a warning saying the annotation was ignored
// (a pod can reach a drain without the disruption controller ever weighing
// its node: it landed on a node already chosen, or the NodeClaim was
// deleted). A valid "false" gets no warning.
func TestAnInvalidDoNotDisruptAnnotationIsNamedWhenThePodIsEvicted(t *testing.T) {
	f := setup(t)
	_, node := managedNode(t, f, "invalid-dnd", nil)
	maybe := podOn(t, node.Name, "maybe", annotated(karpv1.DoNotDisruptAnnotationKey, "maybe"))
	optOut := podOn(t, node.Name, "opt-out", annotated(karpv1.DoNotDisruptAnnotationKey, "false"))
	deleteNode(t, node)
	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
	if exists(t, maybe) || exists(t, optOut) {
		t.Fatal("pods still exist after the drain")
	}
	note := h.EventNote(t, "Pod", maybe.Name, ReasonInvalidDoNotDisruptAnnotation)
	if want := `Invalid karpenter.sh/do-not-disrupt annotation: "maybe" is not a duration, ignoring annotation`; note != want {
		t.Errorf("event note = %q, want %q", note, want)
	}
	h.WaitForEvent(t, "Pod", optOut.Name, ReasonEvicted)
	for _, reason := range h.EventReasons(t, "Pod", optOut.Name) {
		if reason == ReasonInvalidDoNotDisruptAnnotation {
			t.Errorf("pod with do-not-disrupt \"false\" warned about: %v", h.EventReasons(t, "Pod", optOut.Name))
		}
	}
}

func TestDoNotDisruptBlocksTheDrainUntilTheTerminationGracePeriodForcesIt(t *testing.T) {
	f := setup(t)
	// The deadline the NodeClaim termination controller stamps: deletion
	// plus terminationGracePeriod (10 minutes here).
	_, node := managedNode(t, f, "dnd", nil)
	deadline := node.CreationTimestamp.Add(10 * time.Minute)
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "dnd"}}
	h.Get(t, nc)
	nc.Annotations = map[string]string{karpv1.NodeClaimTerminationTimestampAnnotationKey: deadline.UTC().Format(time.RFC3339)}
	if err := h.Env.Client.Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	pod := podOn(t, node.Name, "protected", func(p *corev1.Pod) {
		p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	})
	// A PDB allowing nothing does not hold it past the deadline either.
	blockingPDB(t, pod.Name, 0)
	deleteNode(t, node)

	f.reconcileUntil(t, node.Name, "the drain is blocked", eventSeen(t, "Node", node.Name, ReasonFailedDraining))
	got := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: pod.Name}}
	if !h.Get(t, got) || got.DeletionTimestamp != nil {
		t.Fatal("do-not-disrupt pod disrupted before the deadline")
	}

	// 31 s before the deadline the pod's 30 s grace period still fits.
	// The deletion at the deadline is decided in the reconcile itself, so
	// one reconcile after the fake clock step is the sync point.
	h.Clock.SetTime(deadline.Add(-31 * time.Second))
	f.reconcile(t, node.Name)
	if !h.Get(t, got) || got.DeletionTimestamp != nil {
		t.Fatal("pod deleted before the deadline minus its grace period")
	}
	// 29 s before: it is deleted with the time left as grace period.
	h.Clock.SetTime(deadline.Add(-29 * time.Second))
	f.reconcile(t, node.Name)
	if !h.Get(t, got) || got.DeletionTimestamp == nil {
		t.Fatal("pod not deleted at the deadline minus its grace period")
	}
	if g := got.DeletionGracePeriodSeconds; g == nil || *g != 29 {
		t.Errorf("deletion grace period = %v, want the 29 s left", g)
	}
	h.WaitForEvent(t, "Pod", pod.Name, ReasonDisrupted)
	if !exists(t, node) {
		t.Fatal("node released while its pod was terminating")
	}
	// Past the deadline nothing is waited for any more.
	h.Clock.SetTime(deadline.Add(2 * time.Minute))
	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
}

func TestVolumeAttachmentsAreAwaitedBeforeTheInstanceIsDeleted(t *testing.T) {
	f := setup(t)
	nc, node := managedNode(t, f, "volumes", nil)
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "va-volumes"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: node.Name,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")}},
	}
	h.Create(t, va)
	deleteNode(t, node)

	f.reconcileUntil(t, node.Name, "the controller awaits the volume", eventSeen(t, "Node", node.Name, ReasonAwaitingVolumeDetachment))
	if !exists(t, node) {
		t.Fatal("node released while a volume was attached")
	}
	if len(f.cp.DeleteCalls()) != 0 {
		t.Fatal("instance deleted while a volume was attached")
	}
	if c := nodeClaimCondition(t, nc.Name, karpv1.ConditionTypeVolumesDetached); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("VolumesDetached = %+v, want False", c)
	}

	if err := h.Env.Client.Delete(t.Context(), va); err != nil {
		t.Fatal(err)
	}
	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
	if c := nodeClaimCondition(t, nc.Name, karpv1.ConditionTypeVolumesDetached); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("VolumesDetached = %+v, want True", c)
	}
}

func TestANotReadyNodeWhoseInstanceIsGoneIsReleasedAtOnce(t *testing.T) {
	f := setup(t)
	nc, node := managedNode(t, f, "vanished", nil)
	// A grace period of its own: an ordinary delete would leave it
	// terminating, waiting for a kubelet that is gone.
	stranded := podOn(t, node.Name, "stranded", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30) })
	blockingPDB(t, "stranded", 0)
	elsewhere := podOn(t, "elsewhere", "other")
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
	h.UpdateStatus(t, node)
	if err := f.cp.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	deleteNode(t, node)
	f.reconcile(t, node.Name)
	if exists(t, node) {
		t.Error("node with no instance behind it still exists")
	}
	// Its pod runs nowhere: it is deleted now (its PDB notwithstanding),
	// not left for the pod garbage collector's quarantine.
	if exists(t, stranded) {
		t.Error("the pod of a node whose instance is gone was left bound to the released node")
	}
	if !exists(t, elsewhere) {
		t.Error("a pod on another node was deleted")
	}
}

func TestARestartedControllerResumesTheDrainWithoutEvictingAPodTwice(t *testing.T) {
	f := setup(t)
	_, node := managedNode(t, f, "restart", nil)
	free := podOn(t, node.Name, "free")
	guarded := podOn(t, node.Name, "held")
	pdb := blockingPDB(t, "held", 0)
	evictedBefore := testutil.ToFloat64(podsDrainedTotal.WithLabelValues(""))
	deleteNode(t, node)

	f.reconcileUntil(t, node.Name, "the free pod is evicted", gone(t, free))
	f.reconcileUntil(t, node.Name, "the held pod's eviction is refused", eventSeen(t, "Pod", guarded.Name, ReasonFailedDraining))

	// A new process: new controller, new (empty) queue.
	f.restart(t)
	// The replayed request is answered with a conflict (the name has a
	// new UID) or, were the UID not checked, an eviction.
	replayAnswers := func() float64 { return evictionRequests("409") + evictionRequests("200") }
	answeredBefore, refusedBefore := replayAnswers(), evictionRequests("429")
	// A pod of the same name comes back elsewhere (a StatefulSet would do
	// this); a replayed request for the old pod must not touch it.
	again := podOn(t, "elsewhere", "free")
	f.queue.Add("", free)
	// Sync point: the new queue tried the replayed request and the held
	// pod (refused by its PDB).
	f.reconcileUntil(t, node.Name, "the new queue tries both requests", func() bool {
		return replayAnswers() > answeredBefore && evictionRequests("429") > refusedBefore
	})
	got := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: again.Name}}
	if !h.Get(t, got) || got.UID != again.UID || got.DeletionTimestamp != nil {
		t.Fatal("a stale eviction request removed a newer pod of the same name")
	}
	if !exists(t, node) || !exists(t, guarded) {
		t.Fatal("drain finished while a PDB still held a pod")
	}
	setPDBAllowed(t, pdb, 1)
	f.reconcileUntil(t, node.Name, "the node is released", gone(t, node))
	if n := testutil.ToFloat64(podsDrainedTotal.WithLabelValues("")) - evictedBefore; n != 2 {
		t.Errorf("%v evictions succeeded, want exactly 2 (one per pod)", n)
	}
	if !exists(t, again) {
		t.Error("the newer pod was evicted")
	}
}
