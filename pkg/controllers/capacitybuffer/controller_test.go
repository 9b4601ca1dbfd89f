package capacitybuffer_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	"github.com/karp-autoscaler/karp/pkg/controllers/capacitybuffer"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// triggers counts the provisioning passes the controller asked for.
type triggers struct {
	mu sync.Mutex
	n  int
}

func (tr *triggers) Trigger(types.UID) { tr.mu.Lock(); tr.n++; tr.mu.Unlock() }

func (tr *triggers) count() int { tr.mu.Lock(); defer tr.mu.Unlock(); return tr.n }

type fixture struct {
	t        *testing.T
	c        *capacitybuffer.Controller
	store    *buffers.Store
	triggers *triggers
	clock    *clocktesting.FakeClock
}

// setup builds the controller over the API server directly (no cache, so
// each reconcile sees the test's last write).
func setup(t *testing.T) *fixture {
	f := &fixture{t: t, store: buffers.NewStore(), triggers: &triggers{},
		clock: clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))}
	f.c = capacitybuffer.NewController(env.Client, env.Client, f.store, f.triggers, f.clock)
	return f
}

func (f *fixture) reconcile(cb *autoscalingv1beta1.CapacityBuffer) *autoscalingv1beta1.CapacityBuffer {
	f.t.Helper()
	key := client.ObjectKeyFromObject(cb)
	if _, err := f.c.Reconcile(f.t.Context(), reconcile.Request{NamespacedName: key}); err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	got := &autoscalingv1beta1.CapacityBuffer{}
	if err := env.Client.Get(f.t.Context(), key, got); err != nil {
		f.t.Fatal(err)
	}
	return got
}

// expect checks a condition's status and reason, that it carries a
// message and the buffer's generation.
func expect(t *testing.T, cb *autoscalingv1beta1.CapacityBuffer, conditionType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	cond := apimeta.FindStatusCondition(cb.Status.Conditions, conditionType)
	if cond == nil || cond.Status != status || cond.Reason != reason {
		t.Fatalf("%s = %+v, want %s %s", conditionType, cond, status, reason)
	}
	if cond.Message == "" || cond.ObservedGeneration != cb.Generation {
		t.Errorf("%s: message %q, observedGeneration %d (generation %d)", conditionType, cond.Message, cond.ObservedGeneration, cb.Generation)
	}
	return cond
}

func podTemplate(name, cpu string) *corev1.PodTemplate {
	return &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Template: podTemplateSpec(name, cpu)}
}

func podTemplateSpec(app, cpu string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

func buffer(name string, spec autoscalingv1beta1.CapacityBufferSpec) *autoscalingv1beta1.CapacityBuffer {
	return &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Spec: spec}
}

// TestPodTemplateBufferConditions walks a podTemplateRef buffer through
// each transition: template missing, resolved, the provisioner's
// outcomes, template gone again, buffer deleted.
func TestPodTemplateBufferConditions(t *testing.T) {
	f := setup(t)
	cb := buffer("warm", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "warm-shape"}, Replicas: ptr.To[int32](3)})
	env.Create(t, cb)
	key := client.ObjectKeyFromObject(cb)

	// 1. No PodTemplate yet.
	got := f.reconcile(cb)
	expect(t, got, autoscalingv1beta1.ConditionTypeReadyForProvisioning, metav1.ConditionFalse, autoscalingv1beta1.ReasonPodTemplateNotFound)
	expect(t, got, autoscalingv1beta1.ConditionTypeProvisioning, metav1.ConditionFalse, autoscalingv1beta1.ReasonNotReadyForProvisioning)
	if got.Status.Replicas != nil || len(f.store.Pods()) != 0 || f.triggers.count() != 0 {
		t.Fatalf("unresolved buffer: replicas %v, %d virtual pods, %d triggers", got.Status.Replicas, len(f.store.Pods()), f.triggers.count())
	}
	if s := ptr.Deref(got.Status.ProvisioningStrategy, ""); s != autoscalingv1beta1.ActiveProvisioningStrategy {
		t.Errorf("status.provisioningStrategy = %q", s)
	}

	// 2. The template appears: resolved, waiting for a provisioning pass.
	pt := podTemplate("warm-shape", "1")
	env.Create(t, pt)
	f.clock.Step(time.Minute)
	got = f.reconcile(cb)
	ready := expect(t, got, autoscalingv1beta1.ConditionTypeReadyForProvisioning, metav1.ConditionTrue, autoscalingv1beta1.ReasonResolved)
	if !ready.LastTransitionTime.Time.Equal(f.clock.Now()) {
		t.Errorf("ReadyForProvisioning transitioned at %v, want the fake clock's %v", ready.LastTransitionTime, f.clock.Now())
	}
	expect(t, got, autoscalingv1beta1.ConditionTypeProvisioning, metav1.ConditionUnknown, capacitybuffer.ReasonProvisioningPending)
	if ptr.Deref(got.Status.Replicas, -1) != 3 || got.Status.PodTemplateRef == nil || got.Status.PodTemplateRef.Name != "warm-shape" ||
		got.Status.PodTemplateGeneration == nil {
		t.Errorf("status = replicas %v, podTemplateRef %+v, podTemplateGeneration %v", got.Status.Replicas, got.Status.PodTemplateRef, got.Status.PodTemplateGeneration)
	}
	pods := f.store.Pods()
	if len(pods) != 3 || pods[0].Labels["app"] != "warm-shape" || f.triggers.count() != 1 {
		t.Fatalf("%d virtual pods (labels %v), %d triggers; want 3 of the template and one trigger", len(pods), pods[0].Labels, f.triggers.count())
	}
	// Each reconcile (the resync) asks for a pass, so used room is refilled.
	f.reconcile(cb)
	if f.triggers.count() != 2 {
		t.Errorf("a resync of a resolved buffer triggered %d passes in all, want 2", f.triggers.count())
	}

	// 3. The provisioner needed new nodes, then found room on them.
	f.store.Record(map[types.NamespacedName]buffers.Outcome{key: {Existing: 1, New: 2}})
	got = f.reconcile(cb)
	cond := expect(t, got, autoscalingv1beta1.ConditionTypeProvisioning, metav1.ConditionFalse, autoscalingv1beta1.ReasonRequiresNewCapacity)
	if !strings.Contains(cond.Message, "2/3") {
		t.Errorf("RequiresNewCapacity message %q does not count 2/3", cond.Message)
	}
	f.store.Record(map[types.NamespacedName]buffers.Outcome{key: {Existing: 3}})
	got = f.reconcile(cb)
	expect(t, got, autoscalingv1beta1.ConditionTypeProvisioning, metav1.ConditionTrue, autoscalingv1beta1.ReasonFitsExistingCapacity)

	// 4. A new template generation is followed.
	pt.Template = podTemplateSpec("warm-shape", "2")
	if err := env.Client.Update(t.Context(), pt); err != nil {
		t.Fatal(err)
	}
	got = f.reconcile(cb)
	if got.Status.PodTemplateGeneration == nil || *got.Status.PodTemplateGeneration != pt.Generation {
		t.Errorf("podTemplateGeneration = %v, want %d", got.Status.PodTemplateGeneration, pt.Generation)
	}
	if q := f.store.Pods()[0].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("virtual pod cpu %s, want the new template's 2", q.String())
	}

	// 5. The template goes: not ready, no room kept, the provisioner told.
	if err := env.Client.Delete(t.Context(), pt); err != nil {
		t.Fatal(err)
	}
	before := f.triggers.count()
	got = f.reconcile(cb)
	expect(t, got, autoscalingv1beta1.ConditionTypeReadyForProvisioning, metav1.ConditionFalse, autoscalingv1beta1.ReasonPodTemplateNotFound)
	expect(t, got, autoscalingv1beta1.ConditionTypeProvisioning, metav1.ConditionFalse, autoscalingv1beta1.ReasonNotReadyForProvisioning)
	if len(f.store.Pods()) != 0 || f.triggers.count() != before+1 || got.Status.Replicas != nil {
		t.Errorf("after the template went: %d virtual pods, %d new triggers (want 1), replicas %v", len(f.store.Pods()), f.triggers.count()-before, got.Status.Replicas)
	}
	// Not ready again: nothing to provision for.
	f.reconcile(cb)
	if f.triggers.count() != before+1 {
		t.Errorf("an unresolved buffer triggered a pass")
	}

	// 6. A deleted buffer leaves the store.
	env.Create(t, podTemplate("warm-shape", "1"))
	f.reconcile(cb)
	if len(f.store.Pods()) != 3 {
		t.Fatalf("re-resolved buffer has %d virtual pods, want 3", len(f.store.Pods()))
	}
	if err := env.Client.Delete(t.Context(), cb); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.Reconcile(t.Context(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if len(f.store.Pods()) != 0 {
		t.Errorf("deleted buffer still has %d virtual pods", len(f.store.Pods()))
	}
}

// TestScalableRefBuffers resolves a buffer from each supported kind,
// sizes it by percentage, replicas and limits, and reports a missing or
// unsupported reference.
func TestScalableRefBuffers(t *testing.T) {
	labels := map[string]string{"app": "web"}
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](10), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplateSpec("web", "500m")}}
	deployment.Spec.Template.Labels = labels
	statefulSet := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
		Spec: appsv1.StatefulSetSpec{ServiceName: "db", Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplateSpec("web", "2")}}
	statefulSet.Spec.Template.Labels = labels
	replicaSet := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "rs"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplateSpec("web", "1")}}
	replicaSet.Spec.Template.Labels = labels
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "batch"},
		Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](6), Template: podTemplateSpec("batch", "1")}}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	env.Create(t, deployment, statefulSet, replicaSet, job)
	ref := func(group, kind, name string) *autoscalingv1beta1.ScalableRef {
		return &autoscalingv1beta1.ScalableRef{APIGroup: group, Kind: kind, Name: name}
	}
	tests := map[string]struct {
		spec autoscalingv1beta1.CapacityBufferSpec
		// wantReady is ReadyForProvisioning's reason; wantReplicas and
		// wantCPU the resolved count and pod shape when Resolved.
		wantReady    string
		wantReplicas int32
		wantCPU      string
	}{
		"deployment percentage": {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: ref("apps", "Deployment", "web"), Percentage: ptr.To[int32](20)},
			wantReady: autoscalingv1beta1.ReasonResolved, wantReplicas: 2, wantCPU: "500m"},
		"deployment, empty group": {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: ref("", "Deployment", "web"), Replicas: ptr.To[int32](1)},
			wantReady: autoscalingv1beta1.ReasonResolved, wantReplicas: 1, wantCPU: "500m"},
		"statefulset limits cap percentage": {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: ref("apps", "StatefulSet", "db"), Percentage: ptr.To[int32](100),
			Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}}, wantReady: autoscalingv1beta1.ReasonResolved, wantReplicas: 2, wantCPU: "2"},
		"replicaset percentage above replicas": {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: ref("apps", "ReplicaSet", "rs"), Percentage: ptr.To[int32](50), Replicas: ptr.To[int32](1)},
			wantReady: autoscalingv1beta1.ReasonResolved, wantReplicas: 2, wantCPU: "1"},
		"job parallelism": {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: ref("batch", "Job", "batch"), Percentage: ptr.To[int32](50)},
			wantReady: autoscalingv1beta1.ReasonResolved, wantReplicas: 3, wantCPU: "1"},
		"missing deployment": {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: ref("apps", "Deployment", "nope"), Replicas: ptr.To[int32](1)},
			wantReady: autoscalingv1beta1.ReasonScalableRefNotFound},
		"unsupported kind": {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: ref("apps", "DaemonSet", "web"), Replicas: ptr.To[int32](1)},
			wantReady: autoscalingv1beta1.ReasonResolutionFailed},
		"wrong group": {spec: autoscalingv1beta1.CapacityBufferSpec{ScalableRef: ref("example.com", "Deployment", "web"), Replicas: ptr.To[int32](1)},
			wantReady: autoscalingv1beta1.ReasonResolutionFailed},
		"no reference": {spec: autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](1)}, wantReady: autoscalingv1beta1.ReasonResolutionFailed},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := setup(t)
			cb := buffer(strings.ReplaceAll(strings.ReplaceAll(name, " ", "-"), ",", ""), tc.spec)
			env.Create(t, cb)
			got := f.reconcile(cb)
			if tc.wantReady != autoscalingv1beta1.ReasonResolved {
				expect(t, got, autoscalingv1beta1.ConditionTypeReadyForProvisioning, metav1.ConditionFalse, tc.wantReady)
				expect(t, got, autoscalingv1beta1.ConditionTypeProvisioning, metav1.ConditionFalse, autoscalingv1beta1.ReasonNotReadyForProvisioning)
				if len(f.store.Pods()) != 0 {
					t.Errorf("unresolved buffer has %d virtual pods", len(f.store.Pods()))
				}
				return
			}
			expect(t, got, autoscalingv1beta1.ConditionTypeReadyForProvisioning, metav1.ConditionTrue, autoscalingv1beta1.ReasonResolved)
			if got.Status.PodTemplateRef != nil || ptr.Deref(got.Status.Replicas, -1) != tc.wantReplicas {
				t.Errorf("status: podTemplateRef %+v, replicas %v; want none and %d", got.Status.PodTemplateRef, got.Status.Replicas, tc.wantReplicas)
			}
			pods := f.store.Pods()
			if int32(len(pods)) != tc.wantReplicas {
				t.Fatalf("%d virtual pods, want %d", len(pods), tc.wantReplicas)
			}
			if q := pods[0].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse(tc.wantCPU)) != 0 {
				t.Errorf("virtual pod cpu %s, want the workload's %s", q.String(), tc.wantCPU)
			}
		})
	}
}

// TestEmptyBufferAndOtherStrategies: a buffer resolving to zero pods says
// BufferEmpty and keeps no room; a buffer of another strategy is another
// autoscaler's, and karp leaves it alone.
func TestEmptyBufferAndOtherStrategies(t *testing.T) {
	f := setup(t)
	env.Create(t, podTemplate("tiny-shape", "1"))
	empty := buffer("empty", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "tiny-shape"},
		Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}})
	env.Create(t, empty)
	got := f.reconcile(empty)
	expect(t, got, autoscalingv1beta1.ConditionTypeReadyForProvisioning, metav1.ConditionTrue, autoscalingv1beta1.ReasonResolved)
	expect(t, got, autoscalingv1beta1.ConditionTypeProvisioning, metav1.ConditionFalse, autoscalingv1beta1.ReasonBufferEmpty)
	if ptr.Deref(got.Status.Replicas, -1) != 0 || len(f.store.Pods()) != 0 {
		t.Errorf("empty buffer: replicas %v, %d virtual pods", got.Status.Replicas, len(f.store.Pods()))
	}

	other := buffer("other", autoscalingv1beta1.CapacityBufferSpec{ProvisioningStrategy: ptr.To("example.com/passive"),
		PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "tiny-shape"}, Replicas: ptr.To[int32](2)})
	env.Create(t, other)
	got = f.reconcile(other)
	if len(got.Status.Conditions) != 0 || got.Status.Replicas != nil || len(f.store.Pods()) != 0 {
		t.Errorf("another strategy's buffer: conditions %v, replicas %v, %d virtual pods", got.Status.Conditions, got.Status.Replicas, len(f.store.Pods()))
	}
}
