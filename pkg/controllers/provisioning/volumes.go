package provisioning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// maxVolumeAlternatives caps the OR-ed alternatives a pod's volumes
// produce (the product of each volume's terms).
const maxVolumeAlternatives = 16

// volumeRequirements resolves where each pod's volumes let it run: a bound
// PersistentVolume's node affinity, or for an unbound claim of a
// WaitForFirstConsumer StorageClass, its allowedTopologies. Pods whose
// claims cannot be read are returned separately, with the reason; API
// errors other than NotFound abort the pass.
func (p *Provisioner) volumeRequirements(ctx context.Context, pods []*corev1.Pod) (map[types.UID][]scheduling.Requirements, map[types.UID]simulation.PodError, error) {
	out := map[types.UID][]scheduling.Requirements{}
	ignored := map[types.UID]simulation.PodError{}
	for _, pod := range pods {
		alternatives, err := p.podVolumeRequirements(ctx, pod)
		if err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, nil, err
			}
			ignored[pod.UID] = simulation.PodError{Pod: pod, Status: scheduling.NewStatus(scheduling.Unschedulable, err.Error())}
			continue
		}
		if len(alternatives) > 0 {
			out[pod.UID] = alternatives
		}
	}
	return out, ignored, nil
}

func (p *Provisioner) podVolumeRequirements(ctx context.Context, pod *corev1.Pod) ([]scheduling.Requirements, error) {
	var alternatives []scheduling.Requirements
	for _, vol := range pod.Spec.Volumes {
		claim := claimName(pod, vol)
		if claim == "" {
			continue
		}
		terms, err := p.claimTerms(ctx, pod.Namespace, claim)
		if err != nil {
			return nil, err
		}
		if len(terms) == 0 {
			continue
		}
		alternatives = combine(alternatives, terms)
	}
	return alternatives, nil
}

// claimName is the PersistentVolumeClaim behind a volume, or "".
func claimName(pod *corev1.Pod, vol corev1.Volume) string {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName
	case vol.Ephemeral != nil:
		return pod.Name + "-" + vol.Name
	}
	return ""
}

// claimTerms returns the OR-ed node selector terms the claim allows, or
// none when it does not constrain placement.
func (p *Provisioner) claimTerms(ctx context.Context, namespace, name string) ([]scheduling.Requirements, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := p.kubeClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &pvc); err != nil {
		return nil, fmt.Errorf("getting persistentvolumeclaim %s/%s: %w", namespace, name, err)
	}
	if pvc.Spec.VolumeName != "" {
		var pv corev1.PersistentVolume
		if err := p.kubeClient.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, &pv); err != nil {
			return nil, fmt.Errorf("getting persistentvolume %s: %w", pvc.Spec.VolumeName, err)
		}
		if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			return nil, nil
		}
		var out []scheduling.Requirements
		for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
			out = append(out, scheduling.NewNodeSelectorRequirements(term.MatchExpressions...))
		}
		return out, nil
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return nil, nil
	}
	var sc storagev1.StorageClass
	if err := p.kubeClient.Get(ctx, types.NamespacedName{Name: *pvc.Spec.StorageClassName}, &sc); err != nil {
		return nil, fmt.Errorf("getting storageclass %s: %w", *pvc.Spec.StorageClassName, err)
	}
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return nil, nil
	}
	var out []scheduling.Requirements
	for _, term := range sc.AllowedTopologies {
		var nsrs []corev1.NodeSelectorRequirement
		for _, expr := range term.MatchLabelExpressions {
			nsrs = append(nsrs, corev1.NodeSelectorRequirement{Key: expr.Key, Operator: corev1.NodeSelectorOpIn, Values: expr.Values})
		}
		out = append(out, scheduling.NewNodeSelectorRequirements(nsrs...))
	}
	return out, nil
}

// combine ANDs a new volume's OR-ed terms into the alternatives so far,
// dropping unsatisfiable combinations.
func combine(alternatives, terms []scheduling.Requirements) []scheduling.Requirements {
	if len(alternatives) == 0 {
		return terms
	}
	var out []scheduling.Requirements
	for _, a := range alternatives {
		for _, t := range terms {
			if len(out) >= maxVolumeAlternatives {
				return out
			}
			if r := a.Intersection(t); r.IsSatisfiable() {
				out = append(out, r)
			}
		}
	}
	if len(out) == 0 {
		// Nothing satisfies every volume: keep one impossible alternative
		// so the solver reports the pod instead of ignoring its volumes.
		return []scheduling.Requirements{alternatives[0].Intersection(terms[0])}
	}
	return out
}
