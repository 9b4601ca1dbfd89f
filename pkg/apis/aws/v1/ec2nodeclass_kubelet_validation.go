package v1

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// evictionSignals are the signals evictionHard, evictionSoft and
// evictionSoftGracePeriod may name (upstream's list).
var evictionSignals = []string{
	"memory.available", "nodefs.available", "nodefs.inodesFree",
	"imagefs.available", "imagefs.inodesFree", "pid.available",
}

// reservedResources are the keys kubeReserved and systemReserved may name.
var reservedResources = []string{"cpu", "memory", "ephemeral-storage", "pid"}

// karpOwnedKubeletFields are kubelet fields karp writes itself, with why.
var karpOwnedKubeletFields = map[string]string{
	"registerWithTaints": "karp sets it from the NodeClaim's taints so the node registers unschedulable until it's ready",
}

// ValidateKubelet checks spec.kubelet the way upstream's controller does
// since the API server no longer can (the schema is an open map): field
// names and types against the kubelet's KubeletConfiguration (for passed
// through fields, the top-level kind only), eviction signals and
// thresholds, reserved resources, ranges, and the fields karp owns. It returns the condition reason with one error
// per problem, or "" and nil.
//
// expressionsEnabled is the NodeClassCEL AWS feature gate: without it a
// CEL expression is refused (KubeletExpressionsDisabled, upstream's
// reason). Whether an expression compiles is the caller's to check.
func (in *EC2NodeClass) ValidateKubelet(expressionsEnabled bool) (string, []error) {
	k := in.Spec.Kubelet
	if k == nil {
		return "", nil
	}
	if errs := k.validate(); len(errs) > 0 {
		return ConditionReasonInvalidKubeletConfig, errs
	}
	if k.HasExpressions() && !expressionsEnabled {
		return ConditionReasonKubeletExpressionsDisabled, []error{errors.New("spec.kubelet contains a CEL expression, but the NodeClassCEL feature gate is disabled")}
	}
	if err := in.kubeletSupported(); err != nil {
		return ConditionReasonUnsupportedKubelet, []error{err}
	}
	return "", nil
}

// ConditionReasonKubeletExpressionsDisabled is upstream's reason for a CEL
// expression in spec.kubelet while the NodeClassCEL gate is off.
const ConditionReasonKubeletExpressionsDisabled = "KubeletExpressionsDisabled"

// ConditionReasonKubeletExpressionInvalid is upstream's reason for a CEL
// expression in spec.kubelet that does not compile.
const ConditionReasonKubeletExpressionInvalid = "KubeletExpressionInvalid"

func (in *KubeletConfiguration) validate() []error {
	var errs []error
	for _, name := range sortedKeys(in.Extra) {
		switch why, owned := karpOwnedKubeletFields[name]; {
		case managedKubeletFields[name]:
			errs = append(errs, fmt.Errorf("spec.kubelet.%s: %s is not of the field's type", name, string(in.Extra[name].Raw)))
		case owned:
			errs = append(errs, fmt.Errorf("spec.kubelet.%s: can't be set, %s", name, why))
		default:
			if err := validateKubeletField(name, in.Extra[name].Raw); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for field, signals := range map[string]map[string]string{"evictionHard": in.EvictionHard, "evictionSoft": in.EvictionSoft} {
		for _, key := range sortedKeys(signals) {
			errs = append(errs, validateSignal(field, key)...)
			if err := validateEvictionThreshold(field, key, signals[key]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, key := range sortedKeys(in.EvictionSoftGracePeriod) {
		errs = append(errs, validateSignal("evictionSoftGracePeriod", key)...)
		if in.EvictionSoftGracePeriod[key].Duration < 0 {
			errs = append(errs, fmt.Errorf("spec.kubelet.evictionSoftGracePeriod[%s]: %q can't be a negative duration", key, in.EvictionSoftGracePeriod[key].Duration))
		}
		if _, ok := in.EvictionSoft[key]; !ok {
			errs = append(errs, fmt.Errorf("spec.kubelet.evictionSoftGracePeriod[%s]: has no matching evictionSoft", key))
		}
	}
	for _, key := range sortedKeys(in.EvictionSoft) {
		if _, ok := in.EvictionSoftGracePeriod[key]; !ok {
			errs = append(errs, fmt.Errorf("spec.kubelet.evictionSoft[%s]: has no matching evictionSoftGracePeriod", key))
		}
	}
	for field, reserved := range map[string]map[string]string{"kubeReserved": in.KubeReserved, "systemReserved": in.SystemReserved} {
		errs = append(errs, validateReserved(field, reserved)...)
	}
	errs = append(errs, in.validateRanges()...)
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

func (in *KubeletConfiguration) validateRanges() []error {
	var errs []error
	for field, v := range map[string]*int32{"imageGCHighThresholdPercent": in.ImageGCHighThresholdPercent, "imageGCLowThresholdPercent": in.ImageGCLowThresholdPercent} {
		if v != nil && (*v < 0 || *v > 100) {
			errs = append(errs, fmt.Errorf("spec.kubelet.%s: %d must be between 0 and 100", field, *v))
		}
	}
	for field, v := range map[string]*int32{"podsPerCore": in.PodsPerCore, "evictionMaxPodGracePeriod": in.EvictionMaxPodGracePeriod, "maxPods": in.MaxPods} {
		if v != nil && *v < 0 {
			errs = append(errs, fmt.Errorf("spec.kubelet.%s: %d can't be negative", field, *v))
		}
	}
	if high, low := in.ImageGCHighThresholdPercent, in.ImageGCLowThresholdPercent; high != nil && low != nil && *high <= *low {
		errs = append(errs, fmt.Errorf("spec.kubelet: imageGCHighThresholdPercent (%d) must be greater than imageGCLowThresholdPercent (%d)", *high, *low))
	}
	return errs
}

func validateSignal(field, key string) []error {
	for _, s := range evictionSignals {
		if s == key {
			return nil
		}
	}
	return []error{fmt.Errorf("spec.kubelet.%s: %q isn't a valid eviction signal, must be one of %s", field, key, strings.Join(evictionSignals, ", "))}
}

func validateEvictionThreshold(field, key, value string) error {
	if pct, ok := strings.CutSuffix(value, "%"); ok {
		if v, err := strconv.ParseFloat(pct, 64); err != nil || v < 0 || v > 100 {
			return fmt.Errorf("spec.kubelet.%s[%s]: %q must be a percentage or a resource quantity", field, key, value)
		}
		return nil
	}
	q, err := resource.ParseQuantity(value)
	if err != nil {
		return fmt.Errorf("spec.kubelet.%s[%s]: %q must be a percentage or a resource quantity", field, key, value)
	}
	if q.Sign() < 0 {
		return fmt.Errorf("spec.kubelet.%s[%s]: %q can't be a negative resource quantity", field, key, value)
	}
	return nil
}

// validateReserved checks kubeReserved or systemReserved. Upstream also
// takes CEL expressions there under NodeClassCEL; karp does not evaluate
// them (the options package names that at start), so a value must be a
// quantity.
func validateReserved(field string, reserved map[string]string) []error {
	var errs []error
	for _, key := range sortedKeys(reserved) {
		known := false
		for _, r := range reservedResources {
			known = known || r == key
		}
		if !known {
			errs = append(errs, fmt.Errorf("spec.kubelet.%s: %q isn't a reservable resource, must be one of %s", field, key, strings.Join(reservedResources, ", ")))
		}
		value := reserved[key]
		if strings.HasPrefix(value, "-") {
			errs = append(errs, fmt.Errorf("spec.kubelet.%s[%s]: %q can't be a negative resource quantity", field, key, value))
			continue
		}
		if _, err := resource.ParseQuantity(value); err != nil {
			errs = append(errs, fmt.Errorf("spec.kubelet.%s[%s]: %q is not a resource quantity (karp evaluates no CEL expressions here)", field, key, value))
		}
	}
	return errs
}

// kubeletSupported says which kubelet settings the family's bootstrap
// cannot apply, as upstream: only AL2023 (and Custom, whose user data is
// the user's) passes fields karp does not manage through; Bottlerocket
// has no podsPerCore; only AL2023 takes more than one cluster DNS address.
func (in *EC2NodeClass) kubeletSupported() error {
	k := in.Spec.Kubelet
	family := in.AMIFamily()
	if family == AMIFamilyCustom || family == AMIFamilyAL2023 {
		return nil
	}
	var messages []string
	unsupported := k.UnmanagedFields()
	if family == AMIFamilyBottlerocket && k.PodsPerCore != nil {
		unsupported = append(unsupported, "podsPerCore")
		sort.Strings(unsupported)
	}
	if len(unsupported) > 0 {
		messages = append(messages, fmt.Sprintf("spec.kubelet has fields not applied by the %s AMI family that would be silently dropped: %s",
			family, strings.Join(unsupported, ", ")))
	}
	if len(k.ClusterDNS) > 1 {
		messages = append(messages, fmt.Sprintf("spec.kubelet.clusterDNS: the %s AMI family doesn't accept multiple entries, only one, but %d were set",
			family, len(k.ClusterDNS)))
	}
	if len(messages) == 0 {
		return nil
	}
	return errors.New(strings.Join(messages, "; "))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
