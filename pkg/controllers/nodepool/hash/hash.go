package hash

import (
	"cmp"
	"encoding/json"
	"hash/fnv"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// hashedTemplate is what Template hashes: spec.template without the
// requirements, with sets canonicalised. encoding/json writes map keys
// sorted and omits empty fields, so equal templates encode identically.
type hashedTemplate struct {
	Labels                 map[string]string          `json:"labels,omitempty"`
	Annotations            map[string]string          `json:"annotations,omitempty"`
	Taints                 []corev1.Taint             `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint             `json:"startupTaints,omitempty"`
	NodeClassRef           *karpv1.NodeClassReference `json:"nodeClassRef,omitempty"`
	ExpireAfter            string                     `json:"expireAfter,omitempty"`
	TerminationGracePeriod string                     `json:"terminationGracePeriod,omitempty"`
}

// Template returns the hash of a NodePool template (see the package doc).
func Template(template *karpv1.NodeClaimTemplate) string {
	h := hashedTemplate{
		Labels:        nonEmpty(template.ObjectMeta.Labels),
		Annotations:   nonEmpty(template.ObjectMeta.Annotations),
		Taints:        taintSet(template.Spec.Taints),
		StartupTaints: taintSet(template.Spec.StartupTaints),
		NodeClassRef:  template.Spec.NodeClassRef,
	}
	if d := template.Spec.ExpireAfter.Duration; d != nil {
		h.ExpireAfter = d.String()
	} else {
		h.ExpireAfter = "Never"
	}
	if tgp := template.Spec.TerminationGracePeriod; tgp != nil {
		h.TerminationGracePeriod = tgp.Duration.String()
	}
	raw, err := json.Marshal(h)
	if err != nil {
		// Strings, maps of strings and taints always marshal.
		panic("hashing nodepool template: " + err.Error())
	}
	f := fnv.New64a()
	_, _ = f.Write(raw)
	return strconv.FormatUint(f.Sum64(), 10)
}

func nonEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// taintSet sorts and de-duplicates taints (ignoring TimeAdded).
func taintSet(taints []corev1.Taint) []corev1.Taint {
	if len(taints) == 0 {
		return nil
	}
	out := make([]corev1.Taint, len(taints))
	for i, t := range taints {
		out[i] = corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect}
	}
	slices.SortFunc(out, func(a, b corev1.Taint) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Value, b.Value), cmp.Compare(a.Effect, b.Effect))
	})
	return slices.Compact(out)
}
