package v1_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

func TestNodePoolRuntimeValidate(t *testing.T) {
	req := func(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
		return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
	}
	kwokWellKnown := sets.New("karpenter.kwok.sh/instance-cpu")
	tests := map[string]struct {
		mutate  func(*karpv1.NodePool)
		wantErr string // substring; empty means valid
	}{
		"empty template is valid": {mutate: func(*karpv1.NodePool) {}},
		"well-known and provider requirements": {mutate: func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
				req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "a"),
				req("beta.kubernetes.io/arch", corev1.NodeSelectorOpIn, "amd64"),
				req("karpenter.kwok.sh/instance-cpu", karpv1.NodeSelectorOpGte, "4"),
			}
		}},
		"restricted label": {
			mutate: func(np *karpv1.NodePool) {
				np.Spec.Template.ObjectMeta.Labels = map[string]string{"karpenter.sh/x": "y"}
			},
			wantErr: "restricted domain karpenter.sh",
		},
		"hostname label": {
			mutate: func(np *karpv1.NodePool) {
				np.Spec.Template.ObjectMeta.Labels = map[string]string{"kubernetes.io/hostname": "y"}
			},
			wantErr: "label kubernetes.io/hostname is restricted",
		},
		"bad label value": {
			mutate:  func(np *karpv1.NodePool) { np.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "a b"} },
			wantErr: `labels: value of "team"`,
		},
		"duplicate taint across taints and startup taints": {
			mutate: func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}}
				np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "a", Value: "other", Effect: corev1.TaintEffectNoSchedule}}
			},
			wantErr: "startupTaints[0]: duplicate taint a:NoSchedule (also taints[0])",
		},
		"same key different effect is fine": {mutate: func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "a", Effect: corev1.TaintEffectNoSchedule}, {Key: "a", Effect: corev1.TaintEffectNoExecute}}
		}},
		"bad taint effect": {
			mutate:  func(np *karpv1.NodePool) { np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "a", Effect: "Soon"}} },
			wantErr: `taints[0]: effect "Soon"`,
		},
		"nodepool requirement": {
			mutate: func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{req(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "x")}
			},
			wantErr: "label karpenter.sh/nodepool is restricted",
		},
		"Gt with a negative value": {
			mutate: func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{req("example.com/gen", corev1.NodeSelectorOpGt, "-1")}
			},
			wantErr: "non-negative integer",
		},
		"minValues above values": {
			mutate: func(np *karpv1.NodePool) {
				r := req("example.com/family", corev1.NodeSelectorOpIn, "a")
				r.MinValues = ptr.To(2)
				np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{r}
			},
			wantErr: "minValues 2 exceeds the 1 values",
		},
		"hostname requirement": {
			mutate: func(np *karpv1.NodePool) {
				np.Spec.Template.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{req("kubernetes.io/hostname", corev1.NodeSelectorOpExists)}
			},
			wantErr: "label kubernetes.io/hostname is restricted",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nodePool := &karpv1.NodePool{}
			tc.mutate(nodePool)
			err := nodePool.RuntimeValidate(kwokWellKnown)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("RuntimeValidate() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("RuntimeValidate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestNodeClaimRuntimeValidateAllowsNodePoolRequirement(t *testing.T) {
	nodeClaim := &karpv1.NodeClaim{Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"default"}},
	}}}
	if err := nodeClaim.RuntimeValidate(); err != nil {
		t.Fatalf("RuntimeValidate() = %v, want nil", err)
	}
	nodeClaim.Spec.Requirements[0].Key = corev1.LabelHostname
	if err := nodeClaim.RuntimeValidate(); err == nil {
		t.Fatal("RuntimeValidate() accepted a kubernetes.io/hostname requirement")
	}
}
