package simulation

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// MaxVolumeAlternatives caps the OR-ed alternatives a pod's volumes
// produce (the product of each volume's terms).
const MaxVolumeAlternatives = 16

// VolumeClaimName is the PersistentVolumeClaim behind a pod volume (a
// claim, or the claim a generic ephemeral volume creates), or "".
func VolumeClaimName(pod *corev1.Pod, vol corev1.Volume) string {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName
	case vol.Ephemeral != nil:
		return pod.Name + "-" + vol.Name
	}
	return ""
}

// PersistentVolumeTerms returns the OR-ed node selector terms a bound
// volume's node affinity allows, or none when it does not constrain
// placement.
func PersistentVolumeTerms(pv *corev1.PersistentVolume) []scheduling.Requirements {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	var out []scheduling.Requirements
	for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		out = append(out, scheduling.NewNodeSelectorRequirements(term.MatchExpressions...))
	}
	return out
}

// StorageClassTerms returns the OR-ed allowedTopologies of a
// WaitForFirstConsumer StorageClass (where an unbound claim may still be
// provisioned), or none for other classes.
func StorageClassTerms(sc *storagev1.StorageClass) []scheduling.Requirements {
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		return nil
	}
	var out []scheduling.Requirements
	for _, term := range sc.AllowedTopologies {
		var nsrs []corev1.NodeSelectorRequirement
		for _, expr := range term.MatchLabelExpressions {
			nsrs = append(nsrs, corev1.NodeSelectorRequirement{Key: expr.Key, Operator: corev1.NodeSelectorOpIn, Values: expr.Values})
		}
		out = append(out, scheduling.NewNodeSelectorRequirements(nsrs...))
	}
	return out
}

// CombineVolumeTerms ANDs a new volume's OR-ed terms into the alternatives
// so far (at most MaxVolumeAlternatives), dropping unsatisfiable
// combinations. When nothing satisfies every volume it keeps one
// impossible alternative, so the solver reports the pod instead of
// ignoring its volumes.
func CombineVolumeTerms(alternatives, terms []scheduling.Requirements) []scheduling.Requirements {
	if len(terms) == 0 {
		return alternatives
	}
	if len(alternatives) == 0 {
		return terms
	}
	var out []scheduling.Requirements
	for _, a := range alternatives {
		for _, t := range terms {
			if len(out) >= MaxVolumeAlternatives {
				return out
			}
			if r := a.Intersection(t); r.IsSatisfiable() {
				out = append(out, r)
			}
		}
	}
	if len(out) == 0 {
		return []scheduling.Requirements{alternatives[0].Intersection(terms[0])}
	}
	return out
}
