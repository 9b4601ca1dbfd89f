package simulation

import (
	"bytes"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The writers below render the parts of a pod spec that matter for
// scheduling into a class key, field by field (faster than JSON, and
// order-stable for maps). Separators keep adjacent fields apart; equal
// specs render equally, which is all a key needs.

func writeSpread(b *bytes.Buffer, t *corev1.TopologySpreadConstraint) {
	b.WriteString("tsc{")
	b.WriteString(strconv.Itoa(int(t.MaxSkew)))
	b.WriteByte(' ')
	b.WriteString(t.TopologyKey)
	b.WriteByte(' ')
	b.WriteString(string(t.WhenUnsatisfiable))
	writeSelector(b, t.LabelSelector)
	if t.MinDomains != nil {
		b.WriteString(" min=" + strconv.Itoa(int(*t.MinDomains)))
	}
	if t.NodeAffinityPolicy != nil {
		b.WriteString(" aff=" + string(*t.NodeAffinityPolicy))
	}
	if t.NodeTaintsPolicy != nil {
		b.WriteString(" taints=" + string(*t.NodeTaintsPolicy))
	}
	writeStrings(b, " keys=", t.MatchLabelKeys)
	b.WriteByte('}')
}

func writeSelector(b *bytes.Buffer, ls *metav1.LabelSelector) {
	if ls == nil {
		b.WriteString(" sel=nil")
		return
	}
	b.WriteString(" sel{")
	writeMap(b, ' ', ls.MatchLabels)
	for _, e := range ls.MatchExpressions {
		b.WriteString(e.Key + " " + string(e.Operator))
		writeStrings(b, " ", e.Values)
		b.WriteByte(';')
	}
	b.WriteByte('}')
}

func writeStrings(b *bytes.Buffer, prefix string, vals []string) {
	if len(vals) == 0 {
		return
	}
	b.WriteString(prefix)
	b.WriteByte('[')
	for _, v := range vals {
		b.WriteString(v)
		b.WriteByte(',')
	}
	b.WriteByte(']')
}

func writeNodeSelectorTerm(b *bytes.Buffer, t *corev1.NodeSelectorTerm) {
	b.WriteByte('(')
	for _, list := range [][]corev1.NodeSelectorRequirement{t.MatchExpressions, t.MatchFields} {
		for _, r := range list {
			b.WriteString(r.Key + " " + string(r.Operator))
			writeStrings(b, " ", r.Values)
			b.WriteByte(';')
		}
		b.WriteByte('/')
	}
	b.WriteByte(')')
}

func writePodTerm(b *bytes.Buffer, weight int32, t *corev1.PodAffinityTerm) {
	b.WriteString("pt{")
	b.WriteString(strconv.Itoa(int(weight)))
	b.WriteByte(' ')
	b.WriteString(t.TopologyKey)
	writeSelector(b, t.LabelSelector)
	writeStrings(b, " ns=", t.Namespaces)
	if t.NamespaceSelector != nil {
		b.WriteString(" nssel")
		writeSelector(b, t.NamespaceSelector)
	}
	writeStrings(b, " match=", t.MatchLabelKeys)
	writeStrings(b, " mismatch=", t.MismatchLabelKeys)
	b.WriteByte('}')
}

func writeAffinity(b *bytes.Buffer, a *corev1.Affinity) {
	if na := a.NodeAffinity; na != nil {
		b.WriteString("na{")
		if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			for i := range r.NodeSelectorTerms {
				writeNodeSelectorTerm(b, &r.NodeSelectorTerms[i])
			}
		}
		b.WriteByte('|')
		for i := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			p := &na.PreferredDuringSchedulingIgnoredDuringExecution[i]
			b.WriteString(strconv.Itoa(int(p.Weight)))
			writeNodeSelectorTerm(b, &p.Preference)
		}
		b.WriteByte('}')
	}
	if pa := a.PodAffinity; pa != nil {
		b.WriteString("pa{")
		writePodTerms(b, pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		b.WriteByte('}')
	}
	if pa := a.PodAntiAffinity; pa != nil {
		b.WriteString("anti{")
		writePodTerms(b, pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		b.WriteByte('}')
	}
}

func writePodTerms(b *bytes.Buffer, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) {
	for i := range required {
		writePodTerm(b, 0, &required[i])
	}
	b.WriteByte('|')
	for i := range preferred {
		writePodTerm(b, preferred[i].Weight, &preferred[i].PodAffinityTerm)
	}
}
