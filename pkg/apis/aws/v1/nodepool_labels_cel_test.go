package v1_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

var objSeq int

func awsPool() *test.NodePoolWrapper {
	objSeq++
	return test.MakeNodePool(fmt.Sprintf("aws-%d", objSeq)).NodeClassRef(awsv1.NodeClassReference("default"))
}

func awsClaim() *test.NodeClaimWrapper {
	objSeq++
	return test.MakeNodeClaim(fmt.Sprintf("aws-%d", objSeq)).NodeClassRef(awsv1.NodeClassReference("default"))
}

// NodePools and NodeClaims may name the AWS provider's well-known labels
// but no other label in its karpenter.k8s.aws domain, as upstream's CRDs
// have it.
func TestAWSLabelDomainRestricted(t *testing.T) {
	const domainMsg = `label domain "karpenter.k8s.aws" is restricted`
	rejected := map[string]struct {
		obj  client.Object
		want []string
	}{
		"pool label in the domain":        {obj: awsPool().Labels(map[string]string{"karpenter.k8s.aws/team": "a"}).Obj(), want: []string{"spec.template.metadata.labels", domainMsg}},
		"pool label in a subdomain":       {obj: awsPool().Labels(map[string]string{"team.karpenter.k8s.aws/name": "a"}).Obj(), want: []string{"spec.template.metadata.labels", domainMsg}},
		"pool requirement in the domain":  {obj: awsPool().Requirement("karpenter.k8s.aws/custom", corev1.NodeSelectorOpExists).Obj(), want: []string{"spec.template.spec.requirements[0].key", domainMsg}},
		"pool requirement in a subdomain": {obj: awsPool().Requirement("x.karpenter.k8s.aws/custom", corev1.NodeSelectorOpIn, "a").Obj(), want: []string{"spec.template.spec.requirements[0].key", domainMsg}},
		"claim requirement in the domain": {obj: awsClaim().Requirement("karpenter.k8s.aws/custom", corev1.NodeSelectorOpIn, "a").Obj(), want: []string{"spec.requirements[0].key", domainMsg}},
	}
	for name, tc := range rejected {
		t.Run(name, func(t *testing.T) {
			err := kubeClient.Create(t.Context(), tc.obj)
			if err == nil {
				_ = kubeClient.Delete(t.Context(), tc.obj)
				t.Fatalf("created, want rejected with %q", tc.want)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("error is not Invalid: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}

	accepted := map[string]client.Object{
		"pool label of a well-known key":        awsPool().Labels(map[string]string{awsv1.LabelInstanceCategory: "m"}).Obj(),
		"pool label in a look-alike domain":     awsPool().Labels(map[string]string{"karpenter.k8s.awsome/team": "a"}).Obj(),
		"claim requirement of the ec2nodeclass": awsClaim().Requirement(awsv1.LabelNodeClass, corev1.NodeSelectorOpIn, "default").Obj(),
		"pool requirement on placement group":   awsPool().Requirement(awsv1.Group+"/placement-group-id", corev1.NodeSelectorOpIn, "pg-1").Obj(),
	}
	for key := range awsv1.WellKnownLabels {
		if strings.HasPrefix(key, awsv1.Group+"/") {
			accepted["pool requirement "+key] = awsPool().Requirement(key, corev1.NodeSelectorOpExists).Obj()
		}
	}
	for name, obj := range accepted {
		t.Run(name, func(t *testing.T) {
			if err := kubeClient.Create(t.Context(), obj); err != nil {
				t.Fatalf("rejected: %v", err)
			}
			_ = kubeClient.Delete(t.Context(), obj)
		})
	}
}
