package render

import (
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// NodeClaim renders the NodeClaim karp creates for a solver decision,
// from the decision's NodePool: generateName <nodepool>-, owned by the
// NodePool (blocking its deletion), with its termination finalizer,
// labeled with the template labels, the NodePool, the NodeClass and every
// single-valued requirement the provider will not set itself, carrying the
// template's annotations and its hash (NodePool.Hash), the narrowed
// requirements (instance types cheapest first, capacity types), the pods'
// requests plus DaemonSet overhead, and the template's nodeClassRef,
// taints, expiry and termination grace period. The object carries no TypeMeta: a client
// fills it in from its scheme.
func NodeClaim(nc *simulation.NodeClaim) *karpv1.NodeClaim {
	nodePool := nc.NodePool
	providerKeys := providerLabelKeys(nc)
	tmpl := nodePool.Spec.Template
	labels := map[string]string{}
	for k, v := range nc.Requirements.Labels() {
		if !karpv1.WellKnownLabels.Has(k) && !providerKeys.Has(k) {
			labels[k] = v
		}
	}
	for k, v := range tmpl.ObjectMeta.Labels {
		labels[k] = v
	}
	labels[karpv1.NodePoolLabelKey] = nodePool.Name
	if ref := tmpl.Spec.NodeClassRef; ref != nil {
		labels[nodeClassLabelKey(ref)] = ref.Name
	}
	annotations := map[string]string{}
	for k, v := range tmpl.ObjectMeta.Annotations {
		annotations[k] = v
	}
	// The hash of the template this NodeClaim is rendered from, not the
	// NodePool's annotation, which lags a template change (NodePool.Hash).
	annotations[karpv1.NodePoolHashAnnotationKey] = nodePool.Hash()
	annotations[karpv1.NodePoolHashVersionAnnotationKey] = karpv1.NodePoolHashVersion
	if nc.MinValuesRelaxed {
		annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey] = strconv.FormatBool(true)
	}
	reqs := requirements(nc)
	priced, sized := overlaid(nc, reqs)
	if priced {
		annotations[karpv1.PriceOverlayAppliedAnnotationKey] = strconv.FormatBool(true)
	}
	if sized {
		annotations[karpv1.CapacityOverlayAppliedAnnotationKey] = strconv.FormatBool(true)
	}
	blockOwnerDeletion := true
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: nodePool.Name + "-",
			Labels:       labels,
			Annotations:  annotations,
			// Created with the termination finalizer, so the lifecycle
			// controller can launch on its first pass instead of first
			// writing the finalizer and waiting for the update.
			Finalizers: []string{karpv1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodePool",
				Name: nodePool.Name, UID: nodePool.UID, BlockOwnerDeletion: &blockOwnerDeletion}},
		},
		Spec: karpv1.NodeClaimSpec{
			Taints:                 tmpl.Spec.Taints,
			StartupTaints:          tmpl.Spec.StartupTaints,
			Requirements:           reqs,
			Resources:              karpv1.ResourceRequirements{Requests: nc.Requests},
			NodeClassRef:           tmpl.Spec.NodeClassRef,
			TerminationGracePeriod: tmpl.Spec.TerminationGracePeriod,
			ExpireAfter:            tmpl.Spec.ExpireAfter,
		},
	}
}

// overlaid reports whether a NodeOverlay changed the price, and the
// capacity, of any instance type the rendered requirements allow (as
// upstream, which looks at the NodeClaim's instance-type options).
func overlaid(nc *simulation.NodeClaim, reqs []karpv1.NodeSelectorRequirementWithMinValues) (priced, sized bool) {
	allowed := sets.New[string]()
	for _, r := range reqs {
		if r.Key == karpv1.LabelInstanceTypeStable && r.Operator == "In" {
			allowed.Insert(r.Values...)
		}
	}
	for _, it := range nc.InstanceTypes {
		if allowed.Len() > 0 && !allowed.Has(it.Name) {
			continue
		}
		priced = priced || it.PriceOverlaid
		sized = sized || it.CapacityOverlaid
	}
	return priced, sized
}

// nodeClassLabelKey is the label naming a NodeClaim's NodeClass:
// <group>/<lower-case kind>.
func nodeClassLabelKey(ref *karpv1.NodeClassReference) string {
	return ref.Group + "/" + strings.ToLower(ref.Kind)
}

// requirements renders the solver's requirements in key order, keeping
// minValues. The instance-type values keep the solver's price order.
func requirements(nc *simulation.NodeClaim) []karpv1.NodeSelectorRequirementWithMinValues {
	keys := nc.Requirements.Keys()
	sort.Strings(keys)
	var out []karpv1.NodeSelectorRequirementWithMinValues
	for _, k := range keys {
		r := nc.Requirements[k]
		for _, nsr := range r.NodeSelectorRequirements() {
			if k == karpv1.LabelInstanceTypeStable && nsr.Operator == "In" {
				nsr.Values = priceOrdered(nc, nsr.Values)
			}
			out = append(out, karpv1.NodeSelectorRequirementWithMinValues{Key: nsr.Key, Operator: nsr.Operator,
				Values: nsr.Values, MinValues: r.MinValues})
		}
	}
	return out
}

// priceOrdered orders instance-type names as the solver listed the types
// (cheapest first); names it did not list keep their order after them.
func priceOrdered(nc *simulation.NodeClaim, values []string) []string {
	allowed := sets.New(values...)
	out := make([]string, 0, len(values))
	seen := sets.New[string]()
	for _, it := range nc.InstanceTypes {
		if allowed.Has(it.Name) && !seen.Has(it.Name) {
			out = append(out, it.Name)
			seen.Insert(it.Name)
		}
	}
	for _, v := range values {
		if !seen.Has(v) {
			out = append(out, v)
		}
	}
	return out
}

// providerLabelKeys are the label keys the instance types define; the
// provider sets them at launch, so they are not copied onto the NodeClaim.
func providerLabelKeys(nc *simulation.NodeClaim) sets.Set[string] {
	keys := sets.New[string]()
	for _, it := range nc.InstanceTypes {
		for k := range it.Requirements {
			keys.Insert(k)
		}
	}
	return keys
}
