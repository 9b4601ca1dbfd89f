package main

import (
	"fmt"
	"sort"
	"strings"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// awsDomainMessage is upstream's message for a karpenter.k8s.aws label a
// NodePool or NodeClaim may not use.
const awsDomainMessage = `label domain "karpenter.k8s.aws" is restricted`

// awsAllowedLabels are the karpenter.k8s.aws labels NodePools and
// NodeClaims may name: the AWS provider's well-known instance labels,
// the placement-group labels among them.
func awsAllowedLabels() string {
	var keys []string
	for k := range awsv1.WellKnownLabels {
		if strings.HasPrefix(k, awsv1.Group+"/") {
			keys = append(keys, "'"+k+"'")
		}
	}
	sort.Strings(keys)
	return "[" + strings.Join(keys, ", ") + "]"
}

// awsDomainRule rejects keys in the karpenter.k8s.aws domain (or a
// subdomain) other than the allowed ones; expr is the key expression.
func awsDomainRule(expr string) string {
	return fmt.Sprintf(`%s in %s || !%s.matches('^([^/]*[.])?karpenter[.]k8s[.]aws/')`, expr, awsAllowedLabels(), expr)
}

// awsLabelPatches add upstream AWS provider's restriction of its label
// domain to the core NodePool and NodeClaim CRDs, as its chart does.
func awsLabelPatches(requirementsPath, labelsPath string) []patch {
	out := []patch{{path: requirementsPath + ".[].key", set: map[string]interface{}{validationsKey: []interface{}{
		map[string]interface{}{"message": awsDomainMessage, "rule": awsDomainRule("self")},
	}}}}
	if labelsPath != "" {
		out = append(out, patch{path: labelsPath, set: map[string]interface{}{validationsKey: []interface{}{
			map[string]interface{}{"message": awsDomainMessage, "rule": "self.all(x, " + awsDomainRule("x") + ")"},
		}}})
	}
	return out
}
