package static_test

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/controllertest"
)

// bind runs the pod on the NodeClaim's node (initialize names the node
// after the NodeClaim) and waits until the state counts it there.
func (h *harness) bind(pod *corev1.Pod, nc *karpv1.NodeClaim) {
	h.T.Helper()
	pod.Spec.NodeName = nc.Name
	h.Create(pod)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &metav1.Time{Time: h.Clock.Now().Add(-time.Hour)}
	if err := h.Client.Status().Update(h.Ctx, pod); err != nil {
		h.T.Fatalf("starting pod %s: %v", pod.Name, err)
	}
	h.Eventually("pod "+pod.Name+" on "+nc.Name+" in state", func() bool {
		for _, sn := range h.Cluster.Nodes() {
			if sn.NodeClaim == nil || sn.NodeClaim.Name != nc.Name {
				continue
			}
			for _, p := range sn.Pods {
				if p.Name == pod.Name && p.Status.StartTime != nil {
					return true
				}
			}
		}
		return false
	})
}

// names are the NodeClaims' names, sorted.
func names(claims []karpv1.NodeClaim) []string {
	var out []string
	for _, nc := range claims {
		out = append(out, nc.Name)
	}
	slices.Sort(out)
	return out
}

// workload is a pod of a ReplicaSet (so it must move when its node goes).
func workload(name string) *test.PodWrapper {
	return test.MakePod(name).Namespace(controllertest.Namespace).Owner("ReplicaSet", "rs", "rs-uid").Requests("cpu", "100m")
}

// TestStaticScaleDownKeepsBusyAndProtectedNodes: of five initialized nodes,
// two run a pod each and one a do-not-disrupt pod; scaled to 3, the two
// empty nodes go; scaled to 1, the node with the do-not-disrupt pod is the
// one that stays.
func TestStaticScaleDownKeepsBusyAndProtectedNodes(t *testing.T) {
	h := newHarness(t)
	np := h.ReadyNodePool(test.MakeNodePool("static").Replicas(5).Obj())
	h.reconcile(np.Name)
	claims := h.nodeClaims(np.Name)
	if len(claims) != 5 {
		t.Fatalf("%d NodeClaims, want 5", len(claims))
	}
	for i := range claims {
		h.initialize(&claims[i])
	}
	h.bind(workload("busy-a").Obj(), &claims[0])
	h.bind(workload("busy-b").Obj(), &claims[1])
	h.bind(workload("protected").Annotation(karpv1.DoNotDisruptAnnotationKey, "true").Obj(), &claims[2])

	h.scale(np.Name, 3)
	h.reconcile(np.Name)
	want := names(claims[:3])
	if got := names(h.nodeClaims(np.Name)); !slices.Equal(got, want) {
		t.Fatalf("after scaling to 3: NodeClaims %v, want the three with pods %v", got, want)
	}

	h.scale(np.Name, 1)
	h.reconcile(np.Name)
	if got := names(h.nodeClaims(np.Name)); !slices.Equal(got, []string{claims[2].Name}) {
		t.Errorf("after scaling to 1: NodeClaims %v, want the do-not-disrupt pod's %s", got, claims[2].Name)
	}
}

// TestStaticScaleToZero: a static NodePool scaled to 0 through the scale
// subresource deletes all its nodes, launches none, and has its replicas.
func TestStaticScaleToZero(t *testing.T) {
	h := newHarness(t)
	np := h.ReadyNodePool(test.MakeNodePool("static").Replicas(3).Obj())
	h.reconcile(np.Name)
	claims := h.nodeClaims(np.Name)
	if len(claims) != 3 {
		t.Fatalf("%d NodeClaims, want 3", len(claims))
	}
	for i := range claims {
		h.initialize(&claims[i])
	}
	h.scale(np.Name, 0)
	h.reconcile(np.Name)
	if n := len(h.nodeClaims(np.Name)); n != 0 {
		t.Fatalf("%d NodeClaims after scaling to 0, want none", n)
	}
	h.reconcile(np.Name)
	if n := len(h.nodeClaims(np.Name)); n != 0 {
		t.Errorf("%d NodeClaims after another reconcile, want none", n)
	}
	if c := h.served(np.Name); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("ReplicasServed = %+v at 0 replicas and no nodes, want True", c)
	}
}
