package provisioning_test

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestProvisioningRequest runs the controller with the ProvisioningRequest
// gate on:
//  1. a best-effort-atomic request for 40 one-cpu pods (seven fit a
//     c5.2xlarge) within the NodePool's 64-cpu limit gets its nodes and
//     Provisioned=True; the nodes are booked (do-not-disrupt) though empty
//     and consolidateAfter is 0; then 40 pods consuming the request run on
//     them, with no node more;
//  2. an atomic request for 20 pods in a NodePool limited to 8 cpu stays
//     Provisioned=False (CapacityIsNotFound) and no node is launched there;
//  3. check-capacity requests answer from the existing nodes (one 100m pod
//     fits; 200 one-cpu pods do not) and launch nothing.
func TestProvisioningRequest(t *testing.T) {
	restartControllerWith(t, "--feature-gates=ProvisioningRequest=true")
	t.Cleanup(stopController)
	ensureNodeClass(t)
	const name, small = "e2e-provreq", "e2e-provreq-small"
	onDemand2xl := func(n string, cpuLimit string) *karpv1.NodePool {
		return pool(n).Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.2xlarge").
			Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
			Limits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpuLimit)}).Obj()
	}
	create(t, onDemand2xl(name, "64"), onDemand2xl(small, "8"))

	// 1. Atomic, fits: nodes first, then the pods.
	workers := deployment(name, 40, "1", "256Mi", onPool(name))
	workers.Spec.Template.Annotations = map[string]string{autoscalingv1.ConsumeAnnotationKey: "gang"}
	create(t, podTemplate("gang", workers.Spec.Template), provisioningRequest("gang", autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp, "gang", 40))
	waitCondition(t, "gang", autoscalingv1.Provisioned, metav1.ConditionTrue, "CapacityIsProvisioned")
	claims := nodeClaimsOf(t, name)
	if len(claims) < 6 {
		t.Fatalf("%d NodeClaims for 40 one-cpu pods, want at least 6", len(claims))
	}
	for _, nc := range claims {
		if nc.Annotations[karpv1.DoNotDisruptAnnotationKey] != "true" || nc.Annotations["karpenter.sh/provisioning-request"] != "default/gang" {
			t.Errorf("NodeClaim %s annotations %v: want booked for default/gang", nc.Name, nc.Annotations)
		}
	}
	create(t, workers)
	waitRunning(t, "default", name, 40)
	if got := len(nodeClaimsOf(t, name)); got != len(claims) {
		t.Errorf("%d NodeClaims after the pods ran, want the request's %d", got, len(claims))
	}

	// 2. Atomic, does not fit the small pool's limit: nothing launched.
	smallWorkers := deployment(small, 20, "1", "256Mi", onPool(small))
	create(t, podTemplate("too-big", smallWorkers.Spec.Template),
		provisioningRequest("too-big", autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp, "too-big", 20))
	waitCondition(t, "too-big", autoscalingv1.Provisioned, metav1.ConditionFalse, "CapacityIsNotFound")
	if got := len(nodeClaimsOf(t, small)); got != 0 {
		t.Errorf("%d NodeClaims in %s for a request that does not fit, want none", got, small)
	}

	// 3. Check-capacity: answers, launches nothing.
	before := len(nodeClaimsOf(t, name))
	tiny := deployment(name+"-tiny", 1, "100m", "64Mi", onPool(name))
	create(t, podTemplate("tiny", tiny.Spec.Template), provisioningRequest("check-fits", autoscalingv1.ProvisioningClassCheckCapacity, "tiny", 1),
		provisioningRequest("check-too-big", autoscalingv1.ProvisioningClassCheckCapacity, "gang", 200))
	waitCondition(t, "check-fits", autoscalingv1.Provisioned, metav1.ConditionTrue, "CapacityIsFound")
	waitCondition(t, "check-too-big", autoscalingv1.Provisioned, metav1.ConditionFalse, "CapacityIsNotFound")
	if got := len(nodeClaimsOf(t, name)); got != before {
		t.Errorf("%d NodeClaims after the check-capacity requests, want %d", got, before)
	}
	if got := len(nodeClaimsOf(t, small)); got != 0 {
		t.Errorf("%d NodeClaims in %s, want none", got, small)
	}
}

func podTemplate(name string, spec corev1.PodTemplateSpec) *corev1.PodTemplate {
	return &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Template: *spec.DeepCopy()}
}

func provisioningRequest(name, class, tmpl string, count int32) *autoscalingv1.ProvisioningRequest {
	return &autoscalingv1.ProvisioningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: autoscalingv1.ProvisioningRequestSpec{ProvisioningClassName: class,
			PodSets: []autoscalingv1.PodSet{{PodTemplateRef: autoscalingv1.Reference{Name: tmpl}, Count: count}}}}
}

// waitCondition waits until the request's condition has the status and reason.
func waitCondition(t *testing.T, name, conditionType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	framework.Eventually(t, scaleTimeout, func(ctx context.Context) (bool, string) {
		pr := &autoscalingv1.ProvisioningRequest{}
		if err := framework.Current(t).Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, pr); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(pr.Status.Conditions, conditionType)
		return c != nil && c.Status == status && c.Reason == reason,
			fmt.Sprintf("ProvisioningRequest %s %s: %+v", name, conditionType, c)
	})
}
