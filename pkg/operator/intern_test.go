package operator

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/karp-autoscaler/karp/pkg/test"
)

// replica is one pod of a Deployment, decoded on its own (nothing shared).
func replica(name, cpu string, tolerationSeconds int64) *corev1.Pod {
	pod := test.MakePod(name).Labels(map[string]string{"app": "web", "pod-template-hash": "5d4f8"}).
		NodeSelector(map[string]string{"karpenter.sh/nodepool": "default"}).Requests("cpu", cpu, "memory", "1Gi").Obj()
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(tolerationSeconds)}}
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d4f8", UID: "u1", Controller: ptr.To(true)}}
	return pod
}

func same(a, b any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func TestInternedReplicasShareTheirCommonParts(t *testing.T) {
	in := newPodInterner()
	a, b := replica("web-1", "1", 300), replica("web-2", "1", 300)
	want := b.DeepCopy()
	in.intern(a)
	in.intern(b)
	if !equality.Semantic.DeepEqual(b, want) {
		t.Fatalf("interning changed the pod:\n got %+v\nwant %+v", b, want)
	}
	for _, c := range []struct {
		what string
		a, b any
	}{
		{"labels", a.Labels, b.Labels},
		{"node selector", a.Spec.NodeSelector, b.Spec.NodeSelector},
		{"requests", a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests},
		{"tolerations", a.Spec.Tolerations, b.Spec.Tolerations},
		{"owner references", a.OwnerReferences, b.OwnerReferences},
	} {
		if !same(c.a, c.b) {
			t.Errorf("%s not shared between replicas", c.what)
		}
	}
}

func TestInterningKeepsDifferencesApart(t *testing.T) {
	in := newPodInterner()
	base := replica("web-1", "1", 300)
	in.intern(base)
	for _, c := range []struct {
		what string
		pod  *corev1.Pod
		a, b func(*corev1.Pod) any
	}{
		{"cpu 2", replica("web-2", "2", 300), requests, requests},
		{"toleration seconds", replica("web-3", "1", 60), tolerations, tolerations},
	} {
		in.intern(c.pod)
		if same(c.a(base), c.b(c.pod)) {
			t.Errorf("%s: shared with a pod that differs", c.what)
		}
	}
	// The same amount written differently is the same request.
	milli := replica("web-4", "1000m", 300)
	in.intern(milli)
	if q := milli.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.MilliValue() != 1000 {
		t.Errorf("cpu request %s, want 1", q.String())
	}
}

func requests(p *corev1.Pod) any    { return p.Spec.Containers[0].Resources.Requests }
func tolerations(p *corev1.Pod) any { return p.Spec.Tolerations }

func TestInternTablesAreBounded(t *testing.T) {
	in := newPodInterner()
	for i := range internLimit + 10 {
		pod := test.MakePod("p").Labels(map[string]string{"index": string(rune('a'+i%26)) + string(rune(i))}).Obj()
		in.intern(pod)
	}
	if n := len(in.labels); n > internLimit {
		t.Errorf("label table holds %d entries, want at most %d", n, internLimit)
	}
}
