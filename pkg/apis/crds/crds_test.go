package crds_test

import (
	"context"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/karp-autoscaler/karp/pkg/apis/crds"
)

func TestAllReturnsEveryKind(t *testing.T) {
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]apiextensionsv1.ResourceScope{}
	for _, crd := range all {
		got[crd.Spec.Group+"/"+crd.Spec.Names.Kind] = crd.Spec.Scope
	}
	want := map[string]apiextensionsv1.ResourceScope{
		"karpenter.sh/NodePool":           apiextensionsv1.ClusterScoped,
		"karpenter.sh/NodeClaim":          apiextensionsv1.ClusterScoped,
		"karpenter.kwok.sh/KWOKNodeClass": apiextensionsv1.ClusterScoped,
	}
	if len(got) != len(want) {
		t.Fatalf("got kinds %v, want %v", got, want)
	}
	for k, scope := range want {
		if got[k] != scope {
			t.Errorf("%s: scope %q, want %q", k, got[k], scope)
		}
	}
}

// TestCRDsPassAPIServerValidation runs the API server's own CRD validation,
// which also compiles every CEL rule and checks its estimated cost, so a
// rule too expensive to install fails here with the offending path.
func TestCRDsPassAPIServerValidation(t *testing.T) {
	scheme := runtime.NewScheme()
	apiextensionsinstall.Install(scheme)
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range all {
		internal := &apiextensions.CustomResourceDefinition{}
		if err := scheme.Convert(crd, internal, nil); err != nil {
			t.Fatalf("%s: converting: %v", crd.Name, err)
		}
		// A freshly created CRD has its storage version recorded by the server.
		for _, v := range internal.Spec.Versions {
			if v.Storage {
				internal.Status.StoredVersions = append(internal.Status.StoredVersions, v.Name)
			}
		}
		if errs := validation.ValidateCustomResourceDefinition(context.Background(), internal); len(errs) != 0 {
			t.Errorf("%s: %v", crd.Name, errs.ToAggregate())
		}
	}
}
