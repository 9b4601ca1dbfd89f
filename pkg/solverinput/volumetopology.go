package solverinput

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// VolumeTerms returns the OR-ed alternatives the pod's volumes allow together
// (at most simulation.MaxVolumeAlternatives), or none when no volume
// constrains placement. It stops at the first claim, volume or class it
// cannot read.
func VolumeTerms(ctx context.Context, kubeClient client.Reader, pod *corev1.Pod) ([]scheduling.Requirements, error) {
	var alternatives []scheduling.Requirements
	for _, vol := range pod.Spec.Volumes {
		claim := simulation.VolumeClaimName(pod, vol)
		if claim == "" {
			continue
		}
		terms, err := claimTerms(ctx, kubeClient, pod.Namespace, claim)
		if err != nil {
			return nil, err
		}
		alternatives = simulation.CombineVolumeTerms(alternatives, terms)
	}
	return alternatives, nil
}

// claimTerms returns the OR-ed node selector terms the claim allows, or
// none when it does not constrain placement: a bound claim follows its
// volume's node affinity; an unbound one its StorageClass's
// allowedTopologies when the class waits for the first consumer.
func claimTerms(ctx context.Context, kubeClient client.Reader, namespace, name string) ([]scheduling.Requirements, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := kubeClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &pvc); err != nil {
		return nil, fmt.Errorf("getting persistentvolumeclaim %s/%s: %w", namespace, name, err)
	}
	if pvc.Spec.VolumeName != "" {
		var pv corev1.PersistentVolume
		if err := kubeClient.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, &pv); err != nil {
			return nil, fmt.Errorf("getting persistentvolume %s: %w", pvc.Spec.VolumeName, err)
		}
		return simulation.PersistentVolumeTerms(&pv), nil
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return nil, nil
	}
	var sc storagev1.StorageClass
	if err := kubeClient.Get(ctx, types.NamespacedName{Name: *pvc.Spec.StorageClassName}, &sc); err != nil {
		return nil, fmt.Errorf("getting storageclass %s: %w", *pvc.Spec.StorageClassName, err)
	}
	return simulation.StorageClassTerms(&sc), nil
}
