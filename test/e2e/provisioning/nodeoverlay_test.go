package provisioning_test

import (
	"context"
	"fmt"
	"sort"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// widget is the extended resource the capacity overlay adds.
const widget = corev1.ResourceName("example.com/widget")

// TestNodeOverlay runs the controller with the NodeOverlay gate on, in a
// NodePool of c5.large ($0.085/h on demand) and m5.large ($0.096/h):
//  1. without overlays, a 1.5-cpu pod (one a node) launches a c5.large;
//  2. an overlay adding $1/h to c5.large makes the next launch an m5.large;
//  3. pods requesting example.com/widget fit no type until an overlay gives
//     m5.large four widgets; then karp launches an m5.large and they run.
func TestNodeOverlay(t *testing.T) {
	restartControllerWith(t, "--feature-gates=NodeOverlay=true")
	// Registered first, so it runs last: the next test gets the suite's
	// controller back after this test's nodes are gone.
	t.Cleanup(stopController)
	ensureNodeClass(t)
	const name = "e2e-overlay"
	nodePool := pool(name).Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large", "m5.large").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).Obj()
	dep := deployment(name, 1, "1500m", "512Mi", onPool(name))
	create(t, nodePool, dep)

	// 1. No overlay: the cheaper c5.large.
	waitRunning(t, "default", name, 1)
	if types := instanceTypesOf(t, name); len(types) != 1 || types[0] != "c5.large" {
		t.Fatalf("without overlays: instance types %v, want one c5.large", types)
	}

	// 2. c5.large made expensive: the second node is an m5.large.
	priceUp := test.MakeNodeOverlay(name+"-c5-up").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large").
		Requirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, name).PriceAdjustment("+1").Obj()
	create(t, priceUp)
	waitOverlayReady(t, priceUp.Name)
	scale(t, dep, 2)
	waitRunning(t, "default", name, 2)
	if types := instanceTypesOf(t, name); len(types) != 2 || types[0] != "c5.large" || types[1] != "m5.large" {
		t.Fatalf("with c5.large +$1: instance types %v, want the first c5.large and an m5.large", types)
	}
	// Only the NodeClaim launched with the overlay says so.
	if marked := overlayAnnotated(t, name, karpv1.PriceOverlayAppliedAnnotationKey); len(marked) != 2 || marked[0] || !marked[1] {
		t.Errorf("price-overlay-applied by NodeClaim, oldest first: %v; want only the second", marked)
	}

	// 3. Widgets: an overlay gives m5.large four; two pods asking for two
	// each get one new m5.large that advertises them.
	widgets := test.MakeNodeOverlay(name+"-widgets").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large").
		Capacity(corev1.ResourceList{widget: resource.MustParse("4")}).Obj()
	create(t, widgets)
	waitOverlayReady(t, widgets.Name)
	widgetPods := deployment(name+"-widgets", 2, "100m", "128Mi", onPool(name))
	two := resource.MustParse("2")
	c := &widgetPods.Spec.Template.Spec.Containers[0]
	c.Resources.Requests[widget] = two
	c.Resources.Limits = corev1.ResourceList{widget: two}
	create(t, widgetPods)
	waitRunning(t, "default", name+"-widgets", 2)
	framework.Eventually(t, scaleTimeout, func(context.Context) (bool, string) {
		for _, node := range nodesOf(t, name) {
			if q := node.Status.Allocatable[widget]; q.Value() == 4 {
				return node.Labels[corev1.LabelInstanceTypeStable] == "m5.large", "the node with widgets is a " + node.Labels[corev1.LabelInstanceTypeStable]
			}
		}
		return false, "no node advertises 4 widgets"
	})
	if marked := overlayAnnotated(t, name, karpv1.CapacityOverlayAppliedAnnotationKey); len(marked) != 3 || !marked[2] {
		t.Errorf("capacity-overlay-applied by NodeClaim, oldest first: %v; want the third", marked)
	}
}

// overlayAnnotated says, for each of the pool's NodeClaims oldest first,
// whether it carries the annotation "true".
func overlayAnnotated(t *testing.T, pool, key string) []bool {
	t.Helper()
	var out []bool
	for _, nc := range nodeClaimsByAge(t, pool) {
		out = append(out, nc.Annotations[key] == "true")
	}
	return out
}

// instanceTypesOf lists the instance types of the pool's NodeClaims, the
// oldest first.
func instanceTypesOf(t *testing.T, pool string) []string {
	t.Helper()
	var out []string
	for _, nc := range nodeClaimsByAge(t, pool) {
		out = append(out, nc.Labels[corev1.LabelInstanceTypeStable])
	}
	return out
}

// nodeClaimsByAge lists the pool's NodeClaims, the oldest first.
func nodeClaimsByAge(t *testing.T, pool string) []karpv1.NodeClaim {
	t.Helper()
	claims := nodeClaimsOf(t, pool)
	sort.SliceStable(claims, func(i, j int) bool {
		if !claims[i].CreationTimestamp.Equal(&claims[j].CreationTimestamp) {
			return claims[i].CreationTimestamp.Before(&claims[j].CreationTimestamp)
		}
		return claims[i].Name < claims[j].Name
	})
	return claims
}

// waitOverlayReady waits until the controller has validated the overlay.
func waitOverlayReady(t *testing.T, name string) {
	t.Helper()
	framework.Eventually(t, scaleTimeout, func(ctx context.Context) (bool, string) {
		no := &karpv1alpha1.NodeOverlay{}
		if err := framework.Current(t).Client.Get(ctx, client.ObjectKey{Name: name}, no); err != nil {
			return false, err.Error()
		}
		cond := no.StatusConditions().Get(karpv1.ConditionTypeReady)
		return no.StatusConditions().IsTrue(karpv1.ConditionTypeReady), fmt.Sprintf("NodeOverlay %s Ready: %+v", name, cond)
	})
}

// scale sets the deployment's replicas.
func scale(t *testing.T, dep *appsv1.Deployment, replicas int32) {
	t.Helper()
	cl := framework.Current(t).Client
	got := &appsv1.Deployment{}
	if err := cl.Get(t.Context(), client.ObjectKeyFromObject(dep), got); err != nil {
		t.Fatal(err)
	}
	patched := got.DeepCopy()
	patched.Spec.Replicas = ptr.To(replicas)
	if err := cl.Patch(t.Context(), patched, client.MergeFrom(got)); err != nil {
		t.Fatal(err)
	}
}
