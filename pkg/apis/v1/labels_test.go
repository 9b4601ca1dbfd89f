package v1_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

func TestIsRestrictedLabel(t *testing.T) {
	providerLabels := sets.New("karpenter.kwok.sh/instance-cpu")
	tests := map[string]bool{ // key -> restricted
		"karpenter.sh/nodepool":                  true,
		"kubernetes.io/hostname":                 true,
		"karpenter.sh/capacity-type":             false,
		"karpenter.sh/custom":                    true,
		"sub.karpenter.sh/custom":                true,
		"notkarpenter.sh/custom":                 false,
		"kubernetes.io/custom":                   false,
		"node-role.kubernetes.io/worker":         false,
		"topology.kubernetes.io/zone":            false,
		"node.kubernetes.io/instance-type":       false,
		"node.kubernetes.io/anything":            false,
		"node-restriction.kubernetes.io/team":    false,
		"k8s.io/custom":                          false,
		"kops.k8s.io/instancegroup":              false,
		"example.com/team":                       false,
		"team":                                   false,
		"karpenter.kwok.sh/instance-cpu":         false,
		"node.kubernetes.io/windows-build":       false,
		"failure-domain.beta.kubernetes.io/zone": false,
	}
	for key, wantRestricted := range tests {
		err := karpv1.IsRestrictedLabel(key, providerLabels)
		if (err != nil) != wantRestricted {
			t.Errorf("IsRestrictedLabel(%q) = %v, want restricted=%v", key, err, wantRestricted)
		}
	}
}

func TestLimitsExceededBy(t *testing.T) {
	limits := karpv1.Limits{corev1.ResourceCPU: resource.MustParse("10"), "nodes": resource.MustParse("3")}
	tests := map[string]struct {
		usage corev1.ResourceList
		want  string
	}{
		"under":                 {usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("9500m")}},
		"equal is not exceeded": {usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}},
		"unlimited resource":    {usage: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Ti")}},
		"cpu over":              {usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10001m")}, want: "cpu resource usage of 10001m exceeds limit of 10"},
		"first by name":         {usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("11"), "nodes": resource.MustParse("4")}, want: "cpu resource usage of 11 exceeds limit of 10"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := limits.ExceededBy(tc.usage)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("ExceededBy() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWellKnownTaints(t *testing.T) {
	if !karpv1.IsDisruptingTaint(corev1.Taint{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoSchedule}) {
		t.Error("karpenter.sh/disrupted:NoSchedule is not the disrupting taint")
	}
	if karpv1.IsDisruptingTaint(corev1.Taint{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoExecute}) {
		t.Error("karpenter.sh/disrupted:NoExecute counted as the disrupting taint")
	}
	if got := karpv1.UnregisteredNoExecuteTaint; got.Key != "karpenter.sh/unregistered" || got.Effect != corev1.TaintEffectNoExecute {
		t.Errorf("UnregisteredNoExecuteTaint = %+v", got)
	}
}
