package provisioning_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestCapacityBufferKeepsRoom runs a controller with the CapacityBuffer
// gate on, in a NodePool of c5.large (one 1-cpu pod a node) that
// consolidates at once:
//  1. a buffer of one 1-cpu pod launches a node for its room
//     (Provisioning=True, FitsExistingCapacity, once the node is there);
//  2. a new pod of that shape binds to that node without a new one;
//  3. the buffer is refilled: a second node holds its room;
//  4. consolidation and emptiness leave that empty node over ten
//     disruption passes;
//  5. once the buffer is deleted, the empty node goes.
func TestCapacityBufferKeepsRoom(t *testing.T) {
	// The suite's controller would act on the pool too; the next test
	// starts it again.
	stopController()
	const name = "e2e-buffer"
	nodePool := pool(name).Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).
		ConsolidateAfter(karpv1.MustParseNillableDuration("0s")).Obj()
	f, k := framework.RunPool(t, name, nodePool, append(slices.Clone(framework.FastDisruptionArgs), "--feature-gates=CapacityBuffer=true")...)
	cl := f.Client

	// 1. The buffer's room.
	shape := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "shape"},
		Template: deployment(name, 1, "1", "512Mi", onPool(name)).Spec.Template}
	buffer := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "warm"},
		Spec: autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "shape"}, Replicas: ptr.To[int32](1)}}
	framework.Create(t, cl, shape)
	framework.Create(t, cl, buffer)
	waitBufferFits(t, buffer)
	// FitsExistingCapacity counts a launching node; wait for it to register.
	var first []corev1.Node
	framework.Eventually(t, scaleTimeout, func(context.Context) (bool, string) {
		first = nodesOf(t, name)
		return len(first) == 1, fmt.Sprintf("%d nodes, want 1 for the buffer's room", len(first))
	})
	if claims := nodeClaimsOf(t, name); len(claims) != 1 {
		t.Fatalf("the buffer's room: %d NodeClaims, want 1", len(claims))
	}

	// 2. A pod of the buffer's shape runs on that node.
	dep := deployment(name, 1, "1", "512Mi", onPool(name))
	dep.Namespace = name
	if err := cl.Create(t.Context(), dep); err != nil {
		t.Fatal(err)
	}
	pods := waitRunning(t, name, name, 1)
	if pods[0].Spec.NodeName != first[0].Name {
		t.Fatalf("the pod runs on %s, want the buffer's node %s", pods[0].Spec.NodeName, first[0].Name)
	}

	// 3. The buffer is refilled on a second node.
	framework.Eventually(t, scaleTimeout, func(context.Context) (bool, string) {
		return len(nodesOf(t, name)) == 2, fmt.Sprintf("%d nodes, want 2 (the pod's and the refilled buffer's)", len(nodesOf(t, name)))
	})
	waitBufferFits(t, buffer)

	// 4. Disruption leaves the buffer's empty node.
	k.HoldsFor(t, framework.Passes{"disruption": 10}, scaleTimeout, func(ctx context.Context) string {
		claims := nodeClaimsOf(t, name)
		for _, nc := range claims {
			if nc.DeletionTimestamp != nil {
				return fmt.Sprintf("NodeClaim %s is being deleted while the buffer needs its room", nc.Name)
			}
		}
		if len(claims) != 2 {
			return fmt.Sprintf("%d NodeClaims, want 2", len(claims))
		}
		return ""
	})

	// 5. Without the buffer, the empty node goes (so step 4 could fail).
	if err := cl.Delete(t.Context(), buffer); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, scaleTimeout, func(context.Context) (bool, string) {
		claims := nodeClaimsOf(t, name)
		return len(claims) == 1, fmt.Sprintf("%d NodeClaims, want 1 once the buffer is gone", len(claims))
	})
	if got := waitRunning(t, name, name, 1); got[0].Spec.NodeName != first[0].Name {
		t.Errorf("the pod moved to %s", got[0].Spec.NodeName)
	}
}

// waitBufferFits waits until the buffer's pods fit on existing capacity.
func waitBufferFits(t *testing.T, buffer *autoscalingv1beta1.CapacityBuffer) {
	t.Helper()
	framework.Eventually(t, scaleTimeout, func(ctx context.Context) (bool, string) {
		got := &autoscalingv1beta1.CapacityBuffer{}
		if err := framework.Current(t).Client.Get(ctx, client.ObjectKeyFromObject(buffer), got); err != nil {
			return false, err.Error()
		}
		cond := apimeta.FindStatusCondition(got.Status.Conditions, autoscalingv1beta1.ConditionTypeProvisioning)
		return cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == autoscalingv1beta1.ReasonFitsExistingCapacity,
			fmt.Sprintf("CapacityBuffer %s Provisioning: %+v", buffer.Name, cond)
	})
}
