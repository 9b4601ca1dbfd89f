package provisioningrequest

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
)

// pods returns the request's pods (count copies of each PodSet's
// template), or the name of the first PodTemplate that does not exist.
// Templates are read from the API server on each attempt rather than
// cached: only the requests' own are ever needed.
func (c *Controller) pods(ctx context.Context, pr *autoscalingv1.ProvisioningRequest) ([]*corev1.Pod, string, error) {
	templates := map[string]*corev1.PodTemplate{}
	for _, ps := range pr.Spec.PodSets {
		name := ps.PodTemplateRef.Name
		if _, ok := templates[name]; ok {
			continue
		}
		tmpl := &corev1.PodTemplate{}
		if err := c.apiReader.Get(ctx, types.NamespacedName{Namespace: pr.Namespace, Name: name}, tmpl); err != nil {
			if client.IgnoreNotFound(err) == nil {
				return nil, name, nil
			}
			return nil, "", fmt.Errorf("getting podtemplate %s/%s: %w", pr.Namespace, name, err)
		}
		templates[name] = tmpl
	}
	return expand(pr, templates), "", nil
}

// expand makes the request's pods from its templates: pending, unbound,
// each with a UID of its own derived from the request's, and carrying the
// consume annotation the real pods will carry.
func expand(pr *autoscalingv1.ProvisioningRequest, templates map[string]*corev1.PodTemplate) []*corev1.Pod {
	var out []*corev1.Pod
	for i, ps := range pr.Spec.PodSets {
		tmpl := templates[ps.PodTemplateRef.Name]
		for j := range int(ps.Count) {
			name := fmt.Sprintf("%s-%d-%d", pr.Name, i, j)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pr.Namespace,
					UID:    types.UID(fmt.Sprintf("%s-%d-%d", pr.UID, i, j)),
					Labels: copyMap(tmpl.Template.Labels), Annotations: copyMap(tmpl.Template.Annotations)},
				Spec:   *tmpl.Template.Spec.DeepCopy(),
				Status: corev1.PodStatus{Phase: corev1.PodPending},
			}
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[autoscalingv1.ConsumeAnnotationKey] = pr.Name
			pod.Spec.NodeName = ""
			out = append(out, pod)
		}
	}
	return out
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
