package registrationhealth

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// applyConfiguration is the NodePool status the controller owns: its one
// condition and status.nodeClassObservedGeneration.
func applyConfiguration(nodePool *karpv1.NodePool, cond metav1.Condition, nodeClassGeneration int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"status": map[string]any{
			"nodeClassObservedGeneration": nodeClassGeneration,
			"conditions": []any{map[string]any{
				"type":               cond.Type,
				"status":             string(cond.Status),
				"observedGeneration": cond.ObservedGeneration,
				"reason":             cond.Reason,
				"message":            cond.Message,
				"lastTransitionTime": cond.LastTransitionTime.UTC().Format(time.RFC3339),
			}},
		},
	}}
	u.SetGroupVersionKind(karpv1.SchemeGroupVersion.WithKind("NodePool"))
	u.SetName(nodePool.Name)
	return u
}
