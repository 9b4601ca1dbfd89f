package provisioning

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestValidatePod(t *testing.T) {
	req := test.NodeSelectorRequirement
	optOut := req(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpDoesNotExist)
	zoneA := req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "a")
	for name, tc := range map[string]struct {
		pod *corev1.Pod
		// wantErr lists substrings of the reason; empty means provisioned for.
		wantErr   []string
		wantQuiet bool
	}{
		"no constraints": {pod: test.MakePod("p").Obj()},
		"nodeSelector on a NodePool": {
			pod: test.MakePod("p").NodeSelector(map[string]string{karpv1.NodePoolLabelKey: "gpu"}).Obj()},
		"nodeSelector on well-known and custom labels": {
			pod: test.MakePod("p").NodeSelector(map[string]string{corev1.LabelArchStable: "arm64", "example.com/team": "a",
				karpv1.CapacityTypeLabelKey: "spot", "node.kubernetes.io/lifecycle": "x"}).Obj()},
		"deprecated zone label is normalized": {
			pod: test.MakePod("p").NodeSelector(map[string]string{corev1.LabelFailureDomainBetaZone: "a"}).Obj()},
		"nodeSelector on the hostname": {
			pod:     test.MakePod("p").NodeSelector(map[string]string{corev1.LabelHostname: "node-1"}).Obj(),
			wantErr: []string{"nodeSelector kubernetes.io/hostname", "label kubernetes.io/hostname is restricted"}},
		"nodeSelector in karp's domain": {
			pod:     test.MakePod("p").NodeSelector(map[string]string{"karpenter.sh/custom": "x"}).Obj(),
			wantErr: []string{"nodeSelector karpenter.sh/custom", "restricted domain karpenter.sh"}},
		"required affinity on a kubernetes.io subdomain (a NodePool may set it)": {
			pod: test.MakePod("p").NodeAffinityTerm(req("node-role.kubernetes.io/worker", corev1.NodeSelectorOpExists)).Obj()},
		"required affinity with matchFields": {
			pod:     test.MakePod("p").NodeAffinityFieldTerm(req("metadata.name", corev1.NodeSelectorOpIn, "node-1")).Obj(),
			wantErr: []string{"required node affinity term 0: matchFields is not supported"}},
		"Gt needs an integer": {
			pod:     test.MakePod("p").NodeAffinityTerm(req("example.com/gen", corev1.NodeSelectorOpGt, "new")).Obj(),
			wantErr: []string{`operator Gt needs a non-negative integer, got "new"`}},
		"karp's Gte is not a pod operator": {
			pod:     test.MakePod("p").NodeAffinityTerm(req("example.com/gen", karpv1.NodeSelectorOpGte, "3")).Obj(),
			wantErr: []string{`unsupported operator "Gte"`}},
		"every error is named": {
			pod: test.MakePod("p").NodeSelector(map[string]string{corev1.LabelHostname: "n"}).
				NodeAffinityTerm(zoneA).NodeAffinityTerm(req("karpenter.sh/other", corev1.NodeSelectorOpExists)).Obj(),
			wantErr: []string{"nodeSelector kubernetes.io/hostname", "required node affinity term 1, karpenter.sh/other"}},
		"opted out of karp's nodes": {
			pod:     test.MakePod("p").NodeAffinityTerm(optOut, zoneA).Obj(),
			wantErr: []string{"karpenter.sh/nodepool DoesNotExist"}, wantQuiet: true},
		"opted out in one term only": {
			pod: test.MakePod("p").NodeAffinityTerm(optOut).NodeAffinityTerm(zoneA).Obj()},
		"preferences never get a pod ignored": {
			pod: test.MakePod("p").PreferredNodeAffinity(10, req(corev1.LabelHostname, corev1.NodeSelectorOpIn, "node-1")).Obj()},
	} {
		t.Run(name, func(t *testing.T) {
			got := validatePod(tc.pod)
			if len(tc.wantErr) == 0 {
				if got.err != nil {
					t.Fatalf("pod ignored: %v", got.err)
				}
				return
			}
			if got.err == nil {
				t.Fatalf("pod not ignored, want a reason containing %q", tc.wantErr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(got.err.Error(), want) {
					t.Errorf("reason %q does not contain %q", got.err, want)
				}
			}
			if strings.Contains(got.err.Error(), "\n") {
				t.Errorf("reason %q spans lines; it goes into one event message", got.err)
			}
			if got.quiet != tc.wantQuiet {
				t.Errorf("quiet = %v, want %v", got.quiet, tc.wantQuiet)
			}
		})
	}
}

func TestRestrictedLabelHintIsGivenOnce(t *testing.T) {
	req := test.NodeSelectorRequirement
	restricted := test.MakePod("p").NodeSelector(map[string]string{corev1.LabelHostname: "n"}).
		NodeAffinityTerm(req("karpenter.sh/other", corev1.NodeSelectorOpExists)).Obj()
	if got := strings.Count(validatePod(restricted).err.Error(), restrictedHint); got != 1 {
		t.Errorf("hint given %d times for two restricted labels, want once", got)
	}
	badValue := test.MakePod("p").NodeAffinityTerm(req("example.com/gen", corev1.NodeSelectorOpLt, "-1")).Obj()
	if got := validatePod(badValue).err.Error(); strings.Contains(got, restrictedHint) {
		t.Errorf("hint given for a pod using no restricted label: %q", got)
	}
}
