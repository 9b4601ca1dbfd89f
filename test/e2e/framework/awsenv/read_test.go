package awsenv

import "testing"

func TestMetricSumAddsTheSamplesWithEveryLabel(t *testing.T) {
	const text = `# HELP karpenter_nodeclaims_disrupted_total Number of nodeclaims disrupted.
# TYPE karpenter_nodeclaims_disrupted_total counter
karpenter_nodeclaims_disrupted_total{nodepool="a",reason="expired"} 2
karpenter_nodeclaims_disrupted_total{nodepool="b",reason="expired"} 3
karpenter_nodeclaims_disrupted_total{nodepool="a",reason="drifted"} 5
karpenter_nodeclaims_disrupted_total_other{nodepool="a",reason="expired"} 7
karpenter_queue_depth 4
`
	for name, tc := range map[string]struct {
		metric string
		labels []string
		want   float64
	}{
		"every sample":             {metric: "karpenter_nodeclaims_disrupted_total", want: 10},
		"one label":                {metric: "karpenter_nodeclaims_disrupted_total", labels: []string{`reason="expired"`}, want: 5},
		"every label must match":   {metric: "karpenter_nodeclaims_disrupted_total", labels: []string{`reason="expired"`, `nodepool="a"`}, want: 2},
		"no sample matches":        {metric: "karpenter_nodeclaims_disrupted_total", labels: []string{`nodepool="c"`}, want: 0},
		"a metric without labels":  {metric: "karpenter_queue_depth", want: 4},
		"not a prefix of a longer": {metric: "karpenter_nodeclaims_disrupted", want: 0},
	} {
		t.Run(name, func(t *testing.T) {
			if got := MetricSum(text, tc.metric, tc.labels...); got != tc.want {
				t.Errorf("MetricSum(%s, %v) = %v, want %v", tc.metric, tc.labels, got, tc.want)
			}
		})
	}
}

func TestInstanceIDIsTheProviderIDsLastPart(t *testing.T) {
	for providerID, want := range map[string]string{
		"aws:///us-west-2a/i-0123456789abcdef0": "i-0123456789abcdef0",
		"i-0123456789abcdef0":                   "i-0123456789abcdef0",
	} {
		if got := InstanceID(providerID); got != want {
			t.Errorf("InstanceID(%q) = %q, want %q", providerID, got, want)
		}
	}
}
