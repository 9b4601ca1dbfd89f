package v1alpha1

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// restrictedCapacity are the resources an overlay cannot set: the instance
// type's own, as upstream.
var restrictedCapacity = sets.New(corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods)

// RuntimeValidate checks what the CRD's schema cannot: label keys and
// values as NodePool requirements take them, the capacity's resource
// names, and that the price strings parse. extraWellKnown are the
// provider's well-known labels.
func (in *NodeOverlay) RuntimeValidate(extraWellKnown ...sets.Set[string]) error {
	var errs []error
	for i, r := range in.Spec.Requirements {
		req := karpv1.NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: r.Values}
		if err := karpv1.ValidateRequirement(req, extraWellKnown...); err != nil {
			errs = append(errs, fmt.Errorf("requirements[%d] (%s): %w", i, r.Key, err))
		}
		if r.Operator == corev1.NodeSelectorOpNotIn && len(r.Values) == 0 {
			errs = append(errs, fmt.Errorf("requirements[%d] (%s): operator NotIn needs at least one value", i, r.Key))
		}
	}
	for name := range in.Spec.Capacity {
		if restrictedCapacity.Has(name) {
			errs = append(errs, fmt.Errorf("capacity: %s cannot be set, only extended resources", name))
		}
	}
	if in.Spec.Price != nil && in.Spec.PriceAdjustment != nil {
		errs = append(errs, errors.New("cannot set both price and priceAdjustment"))
	}
	if in.Spec.Price != nil {
		if _, err := ParsePriceChange(*in.Spec.Price); err != nil {
			errs = append(errs, fmt.Errorf("price: %w", err))
		}
	}
	if in.Spec.PriceAdjustment != nil {
		if _, err := ParsePriceChange(*in.Spec.PriceAdjustment); err != nil {
			errs = append(errs, fmt.Errorf("priceAdjustment: %w", err))
		}
	}
	return errors.Join(errs...)
}

// PriceChange is a parsed price or priceAdjustment.
//
// +kubebuilder:object:generate=false
type PriceChange struct {
	// Absolute replaces the price with Value (spec.price, unsigned).
	Absolute bool
	// Percent scales the price by 1+Value/100; otherwise Value is added.
	Percent bool
	// Value is the price, the amount or the percentage.
	Value float64
}

// ParsePriceChange parses spec.price ("0.5": absolute) or
// spec.priceAdjustment ("+0.5", "-0.5": an amount; "+10%", "-10%": a
// percentage).
func ParsePriceChange(s string) (PriceChange, error) {
	s = strings.TrimSpace(s)
	change := PriceChange{Absolute: !strings.HasPrefix(s, "+") && !strings.HasPrefix(s, "-")}
	num := s
	if !change.Absolute && strings.HasSuffix(s, "%") {
		change.Percent = true
		num = strings.TrimSuffix(s, "%")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return PriceChange{}, fmt.Errorf("%q is not a price, a signed amount or a signed percentage", s)
	}
	if change.Absolute && v < 0 {
		return PriceChange{}, fmt.Errorf("price %q is negative", s)
	}
	if change.Percent && v < -100 {
		return PriceChange{}, fmt.Errorf("percentage %q is below -100%%", s)
	}
	change.Value = v
	return change, nil
}

// Apply returns price with the change applied, never below zero.
func (c PriceChange) Apply(price float64) float64 {
	var out float64
	switch {
	case c.Absolute:
		return c.Value
	case c.Percent:
		out = price * (1 + c.Value/100)
	default:
		out = price + c.Value
	}
	return max(out, 0)
}
