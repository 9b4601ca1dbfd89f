package scheduling

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestIsKnownEphemeralTaint(t *testing.T) {
	tests := map[string]struct {
		taint corev1.Taint
		want  bool
	}{
		"not-ready NoSchedule":                                    {taint: corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}, want: true},
		"not-ready NoExecute":                                     {taint: corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}, want: true},
		"unreachable NoSchedule":                                  {taint: corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}, want: true},
		"cloud provider uninitialized":                            {taint: corev1.Taint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule}, want: true},
		"karp unregistered":                                       {taint: corev1.Taint{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}, want: true},
		"node readiness controller":                               {taint: corev1.Taint{Key: "readiness.k8s.io/NetworkReady", Value: "pending", Effect: corev1.TaintEffectNoSchedule}, want: true},
		"node readiness controller, any effect":                   {taint: corev1.Taint{Key: "readiness.k8s.io/acme.com/gpu", Effect: corev1.TaintEffectNoExecute}, want: true},
		"the readiness domain alone":                              {taint: corev1.Taint{Key: "readiness.k8s.io", Effect: corev1.TaintEffectNoSchedule}},
		"a readiness subdomain":                                   {taint: corev1.Taint{Key: "node.readiness.k8s.io/x", Effect: corev1.TaintEffectNoSchedule}},
		"unreachable NoExecute":                                   {taint: corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}},
		"uninitialized with another value (key and effect match)": {taint: corev1.Taint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "false", Effect: corev1.TaintEffectNoSchedule}, want: true},
		"user taint":                                              {taint: corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := IsKnownEphemeralTaint(tc.taint); got != tc.want {
				t.Errorf("IsKnownEphemeralTaint(%s) = %v, want %v", tc.taint.ToString(), got, tc.want)
			}
		})
	}
}

func TestWithoutEphemeralDropsEphemeralAndStartupTaints(t *testing.T) {
	startup := []corev1.Taint{{Key: "example.com/agent", Effect: corev1.TaintEffectNoSchedule}}
	user := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	taints := Taints{
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
		{Key: "readiness.k8s.io/NetworkReady", Value: "pending", Effect: corev1.TaintEffectNoSchedule},
		startup[0],
		user,
	}
	if diff := cmp.Diff(Taints{user}, taints.WithoutEphemeral(startup)); diff != "" {
		t.Errorf("WithoutEphemeral (-want,+got):\n%s", diff)
	}
}
