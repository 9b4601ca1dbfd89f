package invariants

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// env is the package's API server (etcd + kube-apiserver, no controllers):
// the tests play the disruption controller, the kubelet and karp by
// writing the objects those would write.
var env *environment.Environment

func TestMain(m *testing.M) { environment.Main(m, &env) }

// testGoneDelay keeps the node-gone wait short in tests.
const testGoneDelay = time.Second

func startMonitor(t *testing.T) *Monitor {
	t.Helper()
	m, err := Start(t.Context(), env.Config, Options{NodeGoneDelay: testGoneDelay})
	if err != nil {
		t.Fatalf("starting the monitor: %v", err)
	}
	t.Cleanup(func() { m.Stop() })
	return m
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func namespace(t *testing.T, name string) string {
	t.Helper()
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	return name
}

// readyNode creates a Ready Node with the taints.
func readyNode(t *testing.T, name, providerID string, taints ...corev1.Taint) *corev1.Node {
	t.Helper()
	node := test.MakeNode(name).ProviderID(providerID).Obj()
	node.Spec.Taints = taints
	create(t, node)
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := env.Client.Status().Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	return node
}

// podSpec is a pod to create with runningPod.
type podSpec struct {
	ns, name, node string
	labels         map[string]string
	annotations    map[string]string
	owner          *metav1.OwnerReference
	tolerations    []corev1.Toleration
	// forNode, when set, pins the pod to that node by required node
	// affinity on metadata.name, as the DaemonSet controller does.
	forNode string
	pending bool
}

// runningPod creates the pod and, unless pending, marks it Running and
// Ready as a kubelet would. Pods bound to a node are deleted gracefully
// (they stay, terminating, until deleted with grace period 0).
func runningPod(t *testing.T, s podSpec) *corev1.Pod {
	t.Helper()
	pod := test.MakePod(s.name).Namespace(s.ns).NodeName(s.node).Labels(s.labels).Obj()
	pod.Annotations = s.annotations
	pod.Spec.Tolerations = s.tolerations
	if s.forNode != "" {
		pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{s.forNode}}},
			}}},
		}}
	}
	if s.owner != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*s.owner}
	}
	create(t, pod)
	if s.pending {
		return pod
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := env.Client.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// budget creates a PDB over app=app needing minAvailable pods, and writes
// the status the disruption controller would: healthy of them healthy.
func budget(t *testing.T, ns, app string, minAvailable, healthy int32) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
	create(t, pdb)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DesiredHealthy: minAvailable,
		CurrentHealthy: healthy, ExpectedPods: healthy, DisruptionsAllowed: max(0, healthy-minAvailable)}
	if err := env.Client.Status().Update(t.Context(), pdb); err != nil {
		t.Fatal(err)
	}
	return pdb
}

// replicaSet creates a ReplicaSet (no controller runs it) and returns a
// controller reference to it.
func replicaSet(t *testing.T, ns, name string, replicas int32) (*appsv1.ReplicaSet, *metav1.OwnerReference) {
	t.Helper()
	labels := map[string]string{"app": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause"}}},
			},
		},
	}
	create(t, rs)
	return rs, metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
}

// statefulSet creates a StatefulSet (no controller runs it) and returns
// a controller reference to it.
func statefulSet(t *testing.T, ns, name string, replicas int32) (*appsv1.StatefulSet, *metav1.OwnerReference) {
	t.Helper()
	labels := map[string]string{"app": name}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause"}}},
			},
		},
	}
	create(t, sts)
	return sts, metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
}

func evict(t *testing.T, pod *corev1.Pod) error {
	t.Helper()
	return env.Client.SubResource("eviction").Create(t.Context(), pod,
		&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}})
}

// waitReport polls the monitor until done accepts its report, and returns
// that report; it fails the test after 30 seconds.
func waitReport(t *testing.T, m *Monitor, what string, done func(Report) bool) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		r := m.Report()
		if done(r) {
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s; report: %s", what, r.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// disruptionsOf renders the disruptions of a namespace as "pod cause".
func disruptionsOf(r Report, ns string) []string {
	var out []string
	for _, d := range r.Disruptions {
		if strings.HasPrefix(d.Pod, ns+"/") {
			out = append(out, fmt.Sprintf("%s %s", strings.TrimPrefix(d.Pod, ns+"/"), d.Cause))
		}
	}
	return out
}

// violationsOf renders the violations whose object or node names
// contain prefix (the test's namespace and node names start with it) as
// "kind object".
func violationsOf(vs []Violation, prefix string) []string {
	var out []string
	for _, v := range vs {
		if strings.Contains(v.Object, prefix) || strings.HasPrefix(v.Node, prefix) {
			out = append(out, fmt.Sprintf("%s %s", v.Kind, v.Object))
		}
	}
	return out
}

func ptrTrue() *bool { return ptr.To(true) }

func clientKey(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }

// fixedInstances is an InstanceLister over a fixed list, for instance
// states the kwok provider cannot produce on demand.
type fixedInstances []*karpv1.NodeClaim

func (f fixedInstances) List(context.Context) ([]*karpv1.NodeClaim, error) { return f, nil }

func instance(nodeClaim, providerID string) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{}
	nc.Name = nodeClaim
	nc.Status.ProviderID = providerID
	return nc
}
