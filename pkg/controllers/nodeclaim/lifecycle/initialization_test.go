package lifecycle_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/lifecycle"
	"github.com/karp-autoscaler/karp/pkg/test"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

func TestInitializationGates(t *testing.T) {
	for name, tc := range map[string]struct {
		nodeClaim  *karpv1.NodeClaim
		node       func(*corev1.Node)
		wantReason string
		// fix makes the Node usable; Initialized must then turn True.
		fix func(*corev1.Node)
	}{
		"node not ready": {
			nodeClaim:  test.MakeNodeClaim("gate").NodePool("default").Obj(),
			node:       func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse },
			wantReason: lifecycle.ReasonNodeNotReady,
			fix:        func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionTrue },
		},
		"known ephemeral taint": {
			nodeClaim: test.MakeNodeClaim("gate").NodePool("default").Obj(),
			node: func(n *corev1.Node) {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
			},
			wantReason: lifecycle.ReasonKnownEphemeralTaintsExist,
			fix:        func(n *corev1.Node) { n.Spec.Taints = nil },
		},
		"node readiness controller taint": {
			nodeClaim: test.MakeNodeClaim("gate").NodePool("default").Obj(),
			node: func(n *corev1.Node) {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "readiness.k8s.io/network-ready", Value: "pending", Effect: corev1.TaintEffectNoSchedule})
			},
			wantReason: lifecycle.ReasonKnownEphemeralTaintsExist,
			fix:        func(n *corev1.Node) { n.Spec.Taints = nil },
		},
		"not-ready NoExecute taint": {
			nodeClaim: test.MakeNodeClaim("gate").NodePool("default").Obj(),
			node: func(n *corev1.Node) {
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute})
			},
			wantReason: lifecycle.ReasonKnownEphemeralTaintsExist,
			fix:        func(n *corev1.Node) { n.Spec.Taints = nil },
		},
		"requested extended resource not registered": {
			nodeClaim:  test.MakeNodeClaim("gate").NodePool("default").Requests(corev1.ResourceList{gpu: resource.MustParse("1")}).Obj(),
			node:       func(n *corev1.Node) { delete(n.Status.Allocatable, gpu) },
			wantReason: lifecycle.ReasonResourceNotRegistered,
			fix:        func(n *corev1.Node) { n.Status.Allocatable[gpu] = resource.MustParse("4") },
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, c := setup(t)
			nc := launched(t, c, tc.nodeClaim)
			nodeFor(t, nc, "gate-node")
			update(t, "gate-node", tc.node)
			mustReconcile(t, c, nc.Name)
			got := getNodeClaim(t, nc.Name)
			if cond := condition(got, karpv1.ConditionTypeRegistered); cond.Status != metav1.ConditionTrue {
				t.Fatalf("Registered = %+v, want True", cond)
			}
			if cond := condition(got, karpv1.ConditionTypeInitialized); cond.Status != metav1.ConditionUnknown || cond.Reason != tc.wantReason {
				t.Errorf("Initialized = %s/%s, want Unknown/%s", cond.Status, cond.Reason, tc.wantReason)
			}
			if got.StatusConditions().IsTrue(karpv1.ConditionTypeReady) {
				t.Error("Ready is True before initialization")
			}

			update(t, "gate-node", tc.fix)
			mustReconcile(t, c, nc.Name)
			if cond := condition(getNodeClaim(t, nc.Name), karpv1.ConditionTypeInitialized); cond.Status != metav1.ConditionTrue {
				t.Errorf("Initialized after the fix = %+v, want True", cond)
			}
		})
	}
}

// update applies mutate to the Node's spec and its status (each write
// only keeps its own half).
func update(t *testing.T, name string, mutate func(*corev1.Node)) {
	t.Helper()
	node := getNode(t, name)
	mutate(node)
	if err := h.Env.Client.Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	node = getNode(t, name)
	mutate(node)
	if err := h.Env.Client.Status().Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
}
