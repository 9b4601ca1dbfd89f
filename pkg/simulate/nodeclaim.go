package simulate

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// toNodeClaim is the NodeClaim karp's provisioner would create for a
// simulated one: generateName <nodepool>-, owned by the NodePool, labels
// from the template plus the NodePool, NodeClass and single-valued
// non-well-known requirements, requirements narrowed to the launchable
// instance and capacity types, and requests of pods plus DaemonSets.
func toNodeClaim(nc *simulation.NodeClaim) *karpv1.NodeClaim {
	np := nc.NodePool
	tmpl := np.Spec.Template
	labels := map[string]string{}
	for k, v := range nc.Requirements.Labels() {
		if !karpv1.WellKnownLabels.Has(k) {
			labels[k] = v
		}
	}
	for k, v := range tmpl.ObjectMeta.Labels {
		labels[k] = v
	}
	labels[karpv1.NodePoolLabelKey] = np.Name
	if ref := tmpl.Spec.NodeClassRef; ref != nil {
		labels[nodeClassLabel(ref)] = ref.Name
	}
	t := true
	claim := &karpv1.NodeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: np.Name + "-",
			Labels:       labels,
			Annotations:  copyStrings(tmpl.ObjectMeta.Annotations),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodePool",
				Name: np.Name, UID: np.UID, BlockOwnerDeletion: &t}},
		},
		Spec: karpv1.NodeClaimSpec{
			Taints:                 tmpl.Spec.Taints,
			StartupTaints:          tmpl.Spec.StartupTaints,
			Requirements:           requirements(nc),
			Resources:              karpv1.ResourceRequirements{Requests: nc.Requests},
			NodeClassRef:           tmpl.Spec.NodeClassRef,
			TerminationGracePeriod: tmpl.Spec.TerminationGracePeriod,
			ExpireAfter:            tmpl.Spec.ExpireAfter,
		},
	}
	return claim
}

// requirements renders the NodeClaim's requirements in key order, keeping
// the NodePool's minValues.
func requirements(nc *simulation.NodeClaim) []karpv1.NodeSelectorRequirementWithMinValues {
	keys := nc.Requirements.Keys()
	sort.Strings(keys)
	var out []karpv1.NodeSelectorRequirementWithMinValues
	for _, k := range keys {
		r := nc.Requirements[k]
		for _, nsr := range r.NodeSelectorRequirements() {
			out = append(out, karpv1.NodeSelectorRequirementWithMinValues{Key: nsr.Key, Operator: nsr.Operator,
				Values: nsr.Values, MinValues: r.MinValues})
		}
	}
	return out
}

func copyStrings(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
