package v1_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// keyRule is what upstream Karpenter's karpenter.sh/v1 schema accepts for
// one label key, where it may appear.
type keyRule struct {
	// label: as a NodePool template label.
	label bool
	// poolReq: as a NodePool requirement key.
	poolReq bool
	// claimReq: as a NodeClaim requirement key.
	claimReq bool
}

var (
	allowedEverywhere = keyRule{label: true, poolReq: true, claimReq: true}
	refusedEverywhere = keyRule{}
)

// upstreamKeyRules are upstream's rules for label and requirement keys:
// only the karpenter.sh domain and its subdomains (except the well-known
// karpenter.sh/capacity-type and karpenter.sh/nodepool) and the
// kubernetes.io/hostname label are restricted; karpenter.sh/nodepool may be
// required by a NodeClaim but neither set nor required by a NodePool. The
// kubernetes.io and k8s.io domains are open (upstream dropped their
// restriction, kubernetes-sigs/karpenter#2586), and so is every provider
// domain's well-known label.
var upstreamKeyRules = map[string]keyRule{
	"kubernetes.io/team":                     allowedEverywhere,
	"app.kubernetes.io/managed-by":           allowedEverywhere,
	"k8s.io/team":                            allowedEverywhere,
	"sub.k8s.io/team":                        allowedEverywhere,
	"node.kubernetes.io/role":                allowedEverywhere,
	"mynode.kubernetes.io/role":              allowedEverywhere,
	"node-restriction.kubernetes.io/team":    allowedEverywhere,
	"kops.k8s.io/instancegroup":              allowedEverywhere,
	"topology.kubernetes.io/zone":            allowedEverywhere,
	"topology.kubernetes.io/region":          allowedEverywhere,
	"node.kubernetes.io/instance-type":       allowedEverywhere,
	"kubernetes.io/arch":                     allowedEverywhere,
	"kubernetes.io/os":                       allowedEverywhere,
	"node.kubernetes.io/windows-build":       allowedEverywhere,
	"failure-domain.beta.kubernetes.io/zone": allowedEverywhere,
	"beta.kubernetes.io/instance-type":       allowedEverywhere,
	"karpenter.sh/capacity-type":             allowedEverywhere,
	"karpenter.kwok.sh/instance-cpu":         allowedEverywhere,
	"karpenter.k8s.aws/instance-family":      allowedEverywhere,
	"example.com/team":                       allowedEverywhere,
	"team":                                   allowedEverywhere,
	"kubernetes.io/hostname":                 refusedEverywhere,
	"karpenter.sh/team":                      refusedEverywhere,
	"team.karpenter.sh/name":                 refusedEverywhere,
	"karpenter.k8s.aws/custom":               refusedEverywhere,
	"karpenter.sh/nodepool":                  {claimReq: true},
	// karp's difference: a reserved launch's NodeClaim requires its
	// reservation under this key (upstream uses the provider's label);
	// NodePools still may not name it.
	"karpenter.sh/reservation-id": {claimReq: true},
}

// TestLabelKeyRulesMatchUpstream creates a NodePool with each key as a
// template label, a NodePool and a NodeClaim requiring it, and checks the
// API server accepts or refuses each as upstream does.
func TestLabelKeyRulesMatchUpstream(t *testing.T) {
	for key, want := range upstreamKeyRules {
		t.Run(key, func(t *testing.T) {
			expectAdmission(t, "template label", want.label,
				test.MakeNodePool("label-rule").Labels(map[string]string{key: "v"}).Obj())
			expectAdmission(t, "NodePool requirement", want.poolReq,
				test.MakeNodePool("label-rule").Requirement(key, corev1.NodeSelectorOpExists).Obj())
			expectAdmission(t, "NodeClaim requirement", want.claimReq,
				test.MakeNodeClaim("label-rule").Requirement(key, corev1.NodeSelectorOpExists).Obj())
		})
	}
}

// TestRuntimeLabelKeyRulesMatchSchema checks the controller's runtime
// validation (the ValidationSucceeded condition) agrees with the schema
// on every core key, so a NodePool the API server accepted is not then
// marked invalid.
func TestRuntimeLabelKeyRulesMatchSchema(t *testing.T) {
	kwokKeys := kwokv1alpha1.WellKnownLabels
	for key, want := range upstreamKeyRules {
		if key == "karpenter.k8s.aws/instance-family" || key == "karpenter.k8s.aws/custom" {
			continue // the AWS domain is checked by its provider's schema rules
		}
		t.Run(key, func(t *testing.T) {
			label := test.MakeNodePool("label-rule").Labels(map[string]string{key: "v"}).Obj()
			checkRuntime(t, "template label", want.label, label.RuntimeValidate(kwokKeys))
			poolReq := test.MakeNodePool("label-rule").Requirement(key, corev1.NodeSelectorOpExists).Obj()
			checkRuntime(t, "NodePool requirement", want.poolReq, poolReq.RuntimeValidate(kwokKeys))
			claimReq := test.MakeNodeClaim("label-rule").Requirement(key, corev1.NodeSelectorOpExists).Obj()
			checkRuntime(t, "NodeClaim requirement", want.claimReq, claimReq.RuntimeValidate(kwokKeys))
		})
	}
}

// TestTaintKeysAreNotDomainRestricted checks taints keep upstream's rules:
// a qualified key, a label value and an effect, in any domain.
func TestTaintKeysAreNotDomainRestricted(t *testing.T) {
	for _, key := range []string{"karpenter.sh/custom", "kubernetes.io/custom", "node.kubernetes.io/unreachable", "k8s.io/team", "dedicated"} {
		t.Run(key, func(t *testing.T) {
			taint := corev1.Taint{Key: key, Value: "v", Effect: corev1.TaintEffectNoSchedule}
			pool := test.MakeNodePool("taint-rule").Taint(taint).StartupTaint(corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute}).Obj()
			expectAdmission(t, "NodePool taint", true, pool)
			checkRuntime(t, "NodePool taint", true, pool.RuntimeValidate())
			claim := test.MakeNodeClaim("taint-rule").Taint(taint).Obj()
			expectAdmission(t, "NodeClaim taint", true, claim)
		})
	}
}

func expectAdmission(t *testing.T, what string, wantAccepted bool, obj client.Object) {
	t.Helper()
	ctx := t.Context()
	err := kubeClient.Create(ctx, obj)
	if err == nil {
		if derr := kubeClient.Delete(ctx, obj); derr != nil {
			t.Fatalf("%s: deleting: %v", what, derr)
		}
	}
	switch {
	case wantAccepted && err != nil:
		t.Errorf("%s: refused, upstream accepts it: %v", what, err)
	case !wantAccepted && err == nil:
		t.Errorf("%s: accepted, upstream refuses it", what)
	case !wantAccepted && !apierrors.IsInvalid(err):
		t.Errorf("%s: error is not Invalid: %v", what, err)
	}
}

func checkRuntime(t *testing.T, what string, wantAccepted bool, err error) {
	t.Helper()
	if wantAccepted && err != nil {
		t.Errorf("%s: runtime validation refused it: %v", what, err)
	}
	if !wantAccepted && err == nil {
		t.Errorf("%s: runtime validation accepted it", what)
	}
}
