package v1

import (
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
)

// RuntimeValidate checks a NodePool against the rules a controller enforces
// on top of the CRD schema (the NodePool ValidationSucceeded condition). It
// repeats the schema's label, taint and requirement rules, so objects
// written before a schema change or built in Go are held to them, and adds
// what CEL does not check: duplicate taints across taints and startupTaints.
// extraWellKnown are provider label keys allowed in restricted domains.
func (in *NodePool) RuntimeValidate(extraWellKnown ...sets.Set[string]) error {
	spec := &in.Spec.Template.Spec
	errs := []error{
		validateTemplateLabels(in.Spec.Template.ObjectMeta.Labels, extraWellKnown),
		validateTaints(spec.Taints, spec.StartupTaints),
		validateRequirements(spec.Requirements, extraWellKnown),
	}
	for i, r := range spec.Requirements {
		if r.Key == NodePoolLabelKey || r.Key == ReservationIDLabelKey {
			errs = append(errs, fmt.Errorf("requirements[%d]: label %s is restricted", i, r.Key))
		}
	}
	return errors.Join(errs...)
}

// RuntimeValidate checks a NodeClaim's taints and requirements like
// NodePool.RuntimeValidate; NodeClaims may require karpenter.sh/nodepool
// and karpenter.sh/reservation-id.
func (in *NodeClaim) RuntimeValidate(extraWellKnown ...sets.Set[string]) error {
	return errors.Join(
		validateTaints(in.Spec.Taints, in.Spec.StartupTaints),
		validateRequirements(in.Spec.Requirements, extraWellKnown),
	)
}

func validateTemplateLabels(labels map[string]string, extraWellKnown []sets.Set[string]) error {
	var errs []error
	for _, key := range sets.List(sets.KeySet(labels)) {
		for _, msg := range validation.IsQualifiedName(key) {
			errs = append(errs, fmt.Errorf("labels: key %q: %s", key, msg))
		}
		for _, msg := range validation.IsValidLabelValue(labels[key]) {
			errs = append(errs, fmt.Errorf("labels: value of %q: %s", key, msg))
		}
		if err := IsRestrictedLabel(key, extraWellKnown...); err != nil {
			errs = append(errs, fmt.Errorf("labels: %w", err))
		}
	}
	return errors.Join(errs...)
}

var validTaintEffects = sets.New(corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)

// validateTaints checks each taint's format and that no key+effect appears
// twice across taints and startupTaints.
func validateTaints(taints, startupTaints []corev1.Taint) error {
	var errs []error
	seen := map[string]string{}
	check := func(field string, list []corev1.Taint) {
		for i, t := range list {
			path := fmt.Sprintf("%s[%d]", field, i)
			for _, msg := range validation.IsQualifiedName(t.Key) {
				errs = append(errs, fmt.Errorf("%s: key %q: %s", path, t.Key, msg))
			}
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, fmt.Errorf("%s: value %q: %s", path, t.Value, msg))
			}
			if !validTaintEffects.Has(t.Effect) {
				errs = append(errs, fmt.Errorf("%s: effect %q is not one of NoSchedule, PreferNoSchedule, NoExecute", path, t.Effect))
			}
			id := t.Key + ":" + string(t.Effect)
			if first, dup := seen[id]; dup {
				errs = append(errs, fmt.Errorf("%s: duplicate taint %s (also %s)", path, id, first))
				continue
			}
			seen[id] = path
		}
	}
	check("taints", taints)
	check("startupTaints", startupTaints)
	return errors.Join(errs...)
}

func validateRequirements(reqs []NodeSelectorRequirementWithMinValues, extraWellKnown []sets.Set[string]) error {
	var errs []error
	for i, r := range reqs {
		if err := validateRequirement(r, extraWellKnown); err != nil {
			errs = append(errs, fmt.Errorf("requirements[%d] (%s): %w", i, r.Key, err))
		}
	}
	return errors.Join(errs...)
}

func validateRequirement(r NodeSelectorRequirementWithMinValues, extraWellKnown []sets.Set[string]) error {
	var errs []error
	for _, msg := range validation.IsQualifiedName(r.Key) {
		errs = append(errs, fmt.Errorf("key: %s", msg))
	}
	key := r.Key
	if stable, ok := NormalizedLabels[key]; ok {
		key = stable
	}
	// karpenter.sh/nodepool and karpenter.sh/reservation-id are checked by
	// the caller: NodeClaims may use them.
	if key != NodePoolLabelKey && key != ReservationIDLabelKey {
		if err := IsRestrictedLabel(key, extraWellKnown...); err != nil {
			errs = append(errs, err)
		}
	}
	for _, v := range r.Values {
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Errorf("value %q: %s", v, msg))
		}
	}
	errs = append(errs, validateOperatorValues(r))
	if r.MinValues != nil {
		if *r.MinValues < 1 || *r.MinValues > 50 {
			errs = append(errs, fmt.Errorf("minValues %d is outside 1..50", *r.MinValues))
		}
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) < *r.MinValues {
			errs = append(errs, fmt.Errorf("minValues %d exceeds the %d values", *r.MinValues, len(r.Values)))
		}
	}
	return errors.Join(errs...)
}

func validateOperatorValues(r NodeSelectorRequirementWithMinValues) error {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		if len(r.Values) == 0 {
			return fmt.Errorf("operator In needs at least one value")
		}
	case corev1.NodeSelectorOpNotIn:
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) != 0 {
			return fmt.Errorf("operator %s takes no values", r.Operator)
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, NodeSelectorOpGte, NodeSelectorOpLte:
		if len(r.Values) != 1 {
			return fmt.Errorf("operator %s needs exactly one value", r.Operator)
		}
		if n, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil || n < 0 {
			return fmt.Errorf("operator %s needs a non-negative integer, got %q", r.Operator, r.Values[0])
		}
	default:
		return fmt.Errorf("unknown operator %q", r.Operator)
	}
	return nil
}

// ValidateRequirement runs the runtime validation of one requirement of a
// NodePool (key, values, operator, minValues), for other APIs that select
// nodes with the same vocabulary (NodeOverlay). karpenter.sh/nodepool is
// allowed.
func ValidateRequirement(r NodeSelectorRequirementWithMinValues, extraWellKnown ...sets.Set[string]) error {
	return validateRequirement(r, extraWellKnown)
}
