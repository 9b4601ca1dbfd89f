package provisioning

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// podOperators are the operators a pod's node selector requirements may
// use (the Kubernetes set; Gte/Lte are karp's NodePool-only extensions).
var podOperators = sets.New(corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
	corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt)

// podCheck is the verdict on one pending pod.
type podCheck struct {
	// err says why karp does not provision for the pod; nil when it does.
	err error
	// quiet is set when the pod opted out of karp's nodes itself: it is
	// ignored without an event.
	quiet bool
}

// validatePods splits the pending pods into those karp provisions for and
// those it ignores, as upstream does: pods that ask for no karp node
// (every required node affinity term has karpenter.sh/nodepool
// DoesNotExist) are dropped quietly; pods whose nodeSelector or required
// node affinity uses a restricted label, an unsupported operator, an
// invalid value or matchFields come back with the reason, for a
// FailedScheduling event.
//
// Unlike upstream, preferred node affinity terms never get a pod ignored:
// the solver drops a preference no NodePool can meet and provisions for
// the rest of the pod's constraints.
func validatePods(ctx context.Context, pods []*corev1.Pod) ([]*corev1.Pod, []simulation.PodError) {
	valid := pods[:0:0]
	var ignored []simulation.PodError
	for _, pod := range pods {
		check := validatePod(pod)
		if check.err == nil {
			valid = append(valid, pod)
			continue
		}
		log.FromContext(ctx).V(1).Info("ignoring pod", "Pod", klog.KObj(pod), "reason", check.err.Error())
		if check.quiet {
			continue
		}
		ignored = append(ignored, simulation.PodError{Pod: pod,
			Status: scheduling.NewStatus(scheduling.UnschedulableAndUnresolvable, scheduling.Because(scheduling.ReasonInvalidPod, "ignoring pod, "+check.err.Error()))})
	}
	ignoredPods.Set(float64(len(pods) - len(valid)))
	return valid, ignored
}

// validatePod checks one pod's node constraints.
func validatePod(pod *corev1.Pod) podCheck {
	if optedOut(pod) {
		return podCheck{quiet: true, err: fmt.Errorf("configured to not run on a karp provisioned node via the %s %s requirement",
			karpv1.NodePoolLabelKey, corev1.NodeSelectorOpDoesNotExist)}
	}
	var errs []error
	for _, key := range sortedKeys(pod.Spec.NodeSelector) {
		r := corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{pod.Spec.NodeSelector[key]}}
		if err := validateRequirement(r); err != nil {
			errs = append(errs, fmt.Errorf("nodeSelector %s: %w", key, err))
		}
	}
	for i, term := range requiredTerms(pod) {
		if len(term.MatchFields) > 0 {
			errs = append(errs, fmt.Errorf("required node affinity term %d: matchFields is not supported", i))
		}
		for _, r := range term.MatchExpressions {
			if err := validateRequirement(r); err != nil {
				errs = append(errs, fmt.Errorf("required node affinity term %d, %s: %w", i, r.Key, err))
			}
		}
	}
	for _, err := range errs {
		if errors.As(err, new(errRestricted)) {
			errs = append(errs, errors.New(restrictedHint))
			break
		}
	}
	return podCheck{err: joinErrors(errs)}
}

// errRestricted marks a requirement on a restricted label; the pod's
// reason then ends with restrictedHint, once.
type errRestricted struct{ error }

func (e errRestricted) Unwrap() error { return e.error }

// restrictedHint says which labels pods may select on.
var restrictedHint = fmt.Sprintf("karp provisions for well-known labels (%s) and labels outside the %s domains",
	strings.Join(sets.List(karpv1.WellKnownLabels), ", "), strings.Join(sets.List(karpv1.RestrictedLabelDomains), ", "))

// optedOut reports whether every required node affinity term (so every
// way the pod can schedule) requires karpenter.sh/nodepool to be absent.
func optedOut(pod *corev1.Pod) bool {
	terms := requiredTerms(pod)
	if len(terms) == 0 {
		return false
	}
	for _, term := range terms {
		excludes := false
		for _, r := range term.MatchExpressions {
			if r.Key == karpv1.NodePoolLabelKey && r.Operator == corev1.NodeSelectorOpDoesNotExist {
				excludes = true
			}
		}
		if !excludes {
			return false
		}
	}
	return true
}

func requiredTerms(pod *corev1.Pod) []corev1.NodeSelectorTerm {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
}

// validateRequirement checks one requirement of a pod: a qualified key
// that is not restricted (karpenter.sh/nodepool is allowed: pods select
// NodePools by it), a Kubernetes operator with the values it needs, and
// valid label values.
func validateRequirement(r corev1.NodeSelectorRequirement) error {
	var errs []error
	key := r.Key
	if stable, ok := karpv1.NormalizedLabels[key]; ok {
		key = stable
	}
	for _, msg := range validation.IsQualifiedName(key) {
		errs = append(errs, fmt.Errorf("key is not a qualified name: %s", msg))
	}
	if key != karpv1.NodePoolLabelKey {
		if err := karpv1.IsRestrictedLabel(key); err != nil {
			errs = append(errs, errRestricted{err})
		}
	}
	if err := validateOperator(r); err != nil {
		errs = append(errs, err)
	}
	for _, v := range r.Values {
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, fmt.Errorf("invalid value %q: %s", v, msg))
		}
	}
	return joinErrors(errs)
}

func validateOperator(r corev1.NodeSelectorRequirement) error {
	if !podOperators.Has(r.Operator) {
		return fmt.Errorf("unsupported operator %q", r.Operator)
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		if len(r.Values) == 0 {
			return fmt.Errorf("operator In needs at least one value")
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			return fmt.Errorf("operator %s needs exactly one value", r.Operator)
		}
		if n, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil || n < 0 {
			return fmt.Errorf("operator %s needs a non-negative integer, got %q", r.Operator, r.Values[0])
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// joinErrors joins errors on one line ("; "), fit for an event message,
// keeping them reachable by errors.As; nil when there are none.
func joinErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return joinedErrors(errs)
}

type joinedErrors []error

func (e joinedErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e joinedErrors) Unwrap() []error { return e }
