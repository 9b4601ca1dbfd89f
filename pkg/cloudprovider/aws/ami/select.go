package ami

import (
	"cmp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// AMI is a resolved image and the instance-type requirements it serves.
type AMI struct {
	ID           string
	Name         string
	CreationDate time.Time
	Deprecated   bool
	// Requirements an instance type must meet to boot this AMI, sorted by
	// key length, then key.
	Requirements []corev1.NodeSelectorRequirement
}

// Select keeps one AMI per distinct requirement set, the best by upstream's
// order: not deprecated, then newest, then greatest name. The result is
// newest first (ties by ID).
func Select(candidates []AMI) []AMI {
	best := map[string]AMI{}
	for _, c := range candidates {
		c.Requirements = sortRequirements(c.Requirements)
		key := requirementsKey(c.Requirements)
		if have, ok := best[key]; !ok || better(c, have) {
			best[key] = c
		}
	}
	out := make([]AMI, 0, len(best))
	for _, a := range best {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b AMI) int {
		if c := b.CreationDate.Compare(a.CreationDate); c != 0 {
			return c
		}
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(requirementsKey(a.Requirements), requirementsKey(b.Requirements))
	})
	return out
}

// better reports whether a should be used rather than b for the same
// requirements.
func better(a, b AMI) bool {
	if a.Deprecated != b.Deprecated {
		return !a.Deprecated
	}
	if !a.CreationDate.Equal(b.CreationDate) {
		return a.CreationDate.After(b.CreationDate)
	}
	if a.Name != b.Name {
		return a.Name > b.Name
	}
	return a.ID < b.ID
}

// sortRequirements orders requirements by key length, then key, and each
// requirement's values, so equal sets compare equal.
func sortRequirements(reqs []corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, 0, len(reqs))
	for _, r := range reqs {
		r.Values = slices.Sorted(slices.Values(r.Values))
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b corev1.NodeSelectorRequirement) int {
		return cmp.Or(cmp.Compare(len(a.Key), len(b.Key)), strings.Compare(a.Key, b.Key))
	})
	return out
}

func requirementsKey(reqs []corev1.NodeSelectorRequirement) string {
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString(r.Key)
		b.WriteByte(' ')
		b.WriteString(string(r.Operator))
		b.WriteByte(' ')
		b.WriteString(strings.Join(r.Values, ","))
		b.WriteByte(';')
	}
	return b.String()
}

// Status converts resolved AMIs into the EC2NodeClass status form, keeping
// their order (newest first).
func Status(amis []AMI) []awsv1.AMI {
	out := make([]awsv1.AMI, 0, len(amis))
	for _, a := range amis {
		out = append(out, awsv1.AMI{ID: a.ID, Name: a.Name, Deprecated: a.Deprecated, Requirements: slices.Clone(a.Requirements)})
	}
	return out
}
