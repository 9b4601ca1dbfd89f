package options

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Feature gate names, as upstream names them.
const (
	FeatureNodeRepair              = "NodeRepair"
	FeatureReservedCapacity        = "ReservedCapacity"
	FeatureSpotToSpotConsolidation = "SpotToSpotConsolidation"
	FeatureNodeOverlay             = "NodeOverlay"
	FeatureStaticCapacity          = "StaticCapacity"
	FeatureCapacityBuffer          = "CapacityBuffer"
	// FeatureProvisioningRequest serves Cluster Autoscaler's
	// ProvisioningRequest API (autoscaling.x-k8s.io/v1); karp's own gate,
	// off by default (upstream Karpenter lacks the API).
	FeatureProvisioningRequest = "ProvisioningRequest"
)

// FeatureGates maps each known gate to whether it is on. It is a flag.Value
// accepting "Name=true,Other=false"; unnamed gates keep their defaults.
type FeatureGates struct {
	gates  map[string]bool
	envErr error
}

// DefaultFeatureGates returns upstream's defaults (and karp's own gates off).
func DefaultFeatureGates() FeatureGates {
	return FeatureGates{gates: map[string]bool{
		FeatureNodeRepair:              false,
		FeatureReservedCapacity:        true,
		FeatureSpotToSpotConsolidation: false,
		FeatureNodeOverlay:             false,
		FeatureStaticCapacity:          false,
		FeatureCapacityBuffer:          false,
		FeatureProvisioningRequest:     false,
	}}
}

// Enabled reports whether the named gate is on (unknown gates are off).
func (f FeatureGates) Enabled(name string) bool { return f.gates[name] }

// String renders the gates sorted by name, as Set accepts them.
func (f FeatureGates) String() string {
	names := make([]string, 0, len(f.gates))
	for name := range f.gates {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + "=" + strconv.FormatBool(f.gates[name])
	}
	return strings.Join(parts, ",")
}

// Set applies "Name=bool" pairs; an unknown gate or a bad value is an error.
func (f *FeatureGates) Set(value string) error {
	if f.gates == nil {
		*f = DefaultFeatureGates()
	}
	for _, pair := range strings.Split(value, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, raw, ok := strings.Cut(pair, "=")
		if !ok {
			return fmt.Errorf("feature gate %q is not of the form Name=true|false", pair)
		}
		name = strings.TrimSpace(name)
		if _, known := f.gates[name]; !known {
			return fmt.Errorf("unknown feature gate %q", name)
		}
		on, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("feature gate %s: %w", name, err)
		}
		f.gates[name] = on
	}
	return nil
}
