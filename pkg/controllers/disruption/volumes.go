package disruption

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/solverinput"
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
		alternatives, err := solverinput.VolumeTerms(ctx, s.kubeClient, pod)
		if apierrors.IsNotFound(err) {
			w.block(cand.Name(), BlockedVolumeTopology, "pod %s/%s: %v", pod.Namespace, pod.Name, err)
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if len(alternatives) > 0 {
			out[pod.UID] = alternatives
		}
	}
	return true, nil
}
