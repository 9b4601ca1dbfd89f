package provisioning

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// hasCompatibleInstanceTypes reports whether any instance type could be
// launched for the NodePool at all: one whose labels meet the NodePool's
// requirements and template labels and that has a usable offering (zone,
// capacity type) those requirements allow. A NodePool without one is
// skipped with a NoCompatibleInstanceTypes event, as upstream does.
func hasCompatibleInstanceTypes(nodePool *karpv1.NodePool, types []*scheduling.InstanceType) bool {
	reqs := nodePoolRequirements(nodePool)
	for _, it := range types {
		if reqs.Intersects(it.Requirements) != nil {
			continue
		}
		if _, ok := it.CheapestOffering(reqs); ok {
			return true
		}
	}
	return false
}

// nodePoolRequirements is what every NodeClaim of the NodePool carries:
// its template labels and requirements, and its own name.
func nodePoolRequirements(nodePool *karpv1.NodePool) scheduling.Requirements {
	reqs := scheduling.NewLabelRequirements(nodePool.Spec.Template.ObjectMeta.Labels)
	for _, r := range nodePool.Spec.Template.Spec.Requirements {
		reqs.Add(scheduling.NewRequirement(scheduling.NormalizeKey(r.Key), r.Operator, r.Values...))
	}
	reqs.Add(scheduling.NewRequirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, nodePool.Name))
	return reqs
}

// SkippedNote is appended to the FailedScheduling message of pods karp
// could not place, naming each NodePool the pass skipped and why, so a pod
// whose only NodePool is misconfigured says so instead of upstream's bare
// "nodepool requirements filtered out all available instance types".
func SkippedNote(skipped map[string]string) string {
	if len(skipped) == 0 {
		return ""
	}
	names := make([]string, 0, len(skipped))
	for name := range skipped {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		b.WriteString("; ")
		b.WriteString(scheduling.PoolReason(name, scheduling.ReasonNodePoolNotReady, "skipped: "+skipped[name]).String())
	}
	return b.String()
}

// Reasons a NodePool is skipped for a pass, in pod messages.
const (
	skippedNoCompatibleTypes = "requirements filtered out all compatible available instance types (" + ReasonNoCompatibleInstanceTypes + ")"
	skippedListingTypes      = "listing its instance types failed"
)
