package disruption

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

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch

// volumeTopology resolves where the candidates' reschedulable pods may run
// because of their volumes, as provisioning does for pending pods: a bound
// PersistentVolume's node affinity (a zonal disk stays in its zone), or
// for an unbound claim of a WaitForFirstConsumer StorageClass its
// allowedTopologies. A candidate whose pod's claim, volume or class is
// gone is dropped with the reason; other API errors abort the pass.
func (s *passSimulator) volumeTopology(ctx context.Context, w *world) (map[types.UID][]scheduling.Requirements, error) {
	out := map[types.UID][]scheduling.Requirements{}
	kept := w.candidates[:0]
	for _, cand := range w.candidates {
		ok, err := s.candidateVolumes(ctx, w, cand, out)
		if err != nil {
			return nil, err
		}
		if ok {
			kept = append(kept, cand)
		}
	}
	w.candidates = kept
	return out, nil
}

// candidateVolumes adds the volume topology of the candidate's pods to out
// and reports whether every pod's volumes could be resolved.
func (s *passSimulator) candidateVolumes(ctx context.Context, w *world, cand *Candidate, out map[types.UID][]scheduling.Requirements) (bool, error) {
	for _, pod := range cand.ReschedulablePods {
		var alternatives []scheduling.Requirements
		for _, vol := range pod.Spec.Volumes {
			claim := simulation.VolumeClaimName(pod, vol)
			if claim == "" {
				continue
			}
			terms, err := s.claimTerms(ctx, pod.Namespace, claim)
			if apierrors.IsNotFound(err) {
				w.block(cand.Name(), BlockedVolumeTopology, "pod %s/%s: %v", pod.Namespace, pod.Name, err)
				return false, nil
			}
			if err != nil {
				return false, err
			}
			alternatives = simulation.CombineVolumeTerms(alternatives, terms)
		}
		if len(alternatives) > 0 {
			out[pod.UID] = alternatives
		}
	}
	return true, nil
}

// claimTerms returns the OR-ed node selector terms the claim allows, or
// none when it does not constrain placement.
func (s *passSimulator) claimTerms(ctx context.Context, namespace, name string) ([]scheduling.Requirements, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := s.kubeClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &pvc); err != nil {
		return nil, fmt.Errorf("getting persistentvolumeclaim %s/%s: %w", namespace, name, err)
	}
	if pvc.Spec.VolumeName != "" {
		var pv corev1.PersistentVolume
		if err := s.kubeClient.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, &pv); err != nil {
			return nil, fmt.Errorf("getting persistentvolume %s: %w", pvc.Spec.VolumeName, err)
		}
		return simulation.PersistentVolumeTerms(&pv), nil
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return nil, nil
	}
	var sc storagev1.StorageClass
	if err := s.kubeClient.Get(ctx, types.NamespacedName{Name: *pvc.Spec.StorageClassName}, &sc); err != nil {
		return nil, fmt.Errorf("getting storageclass %s: %w", *pvc.Spec.StorageClassName, err)
	}
	return simulation.StorageClassTerms(&sc), nil
}
