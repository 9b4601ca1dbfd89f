package crds_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
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
		"karpenter.sh/NodeOverlay":        apiextensionsv1.ClusterScoped,
		"karpenter.kwok.sh/KWOKNodeClass": apiextensionsv1.ClusterScoped,
		"karpenter.k8s.aws/EC2NodeClass":  apiextensionsv1.ClusterScoped,
		// Cluster Autoscaler's API, served behind the ProvisioningRequest gate.
		"autoscaling.x-k8s.io/ProvisioningRequest": apiextensionsv1.NamespaceScoped,
		// Cluster Autoscaler's API, served behind the CapacityBuffer gate.
		"autoscaling.x-k8s.io/CapacityBuffer": apiextensionsv1.NamespaceScoped,
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
		if errs := validateCRD(t, scheme, crd); len(errs) != 0 {
			t.Errorf("%s: %v", crd.Name, errs.ToAggregate())
		}
	}
	// The check is only worth having if it compiles the rules: a broken
	// rule must fail it.
	broken := all[0].DeepCopy()
	spec := broken.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.XValidations = append(spec.XValidations, apiextensionsv1.ValidationRule{Rule: "self.noSuchField.size() >", Message: "broken"})
	broken.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if errs := validateCRD(t, scheme, broken); len(errs) == 0 {
		t.Error("a CRD with an uncompilable CEL rule passed validation")
	}
}

func validateCRD(t *testing.T, scheme *runtime.Scheme, crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	t.Helper()
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
	return validation.ValidateCustomResourceDefinition(t.Context(), internal)
}

// kubectl get shows the same columns as upstream Karpenter; the -o wide
// ones have priority 1.
func TestPrinterColumns(t *testing.T) {
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"NodePool":      {"NodeClass", "Nodes", "Ready", "Age", "Weight*", "CPU*", "Memory*"},
		"NodeClaim":     {"Type", "Capacity", "Zone", "Node", "Ready", "Age", "ImageID*", "ID*", "NodePool*", "NodeClass*", "Drifted*"},
		"KWOKNodeClass": {"Ready", "Age"},
		"NodeOverlay":   {"Ready", "Age", "Weight*"},
		"EC2NodeClass":  {"Ready", "Age", "Role*"},
		// As Cluster Autoscaler's CRD.
		"ProvisioningRequest": {"Age"},
		// As Cluster Autoscaler's and upstream Karpenter's CRD.
		"CapacityBuffer": {"Strategy", "PodTemplate", "Replicas", "ConditionsType", "ConditionsStatus", "ConditionsReason", "Age"},
	}
	for _, crd := range all {
		var got []string
		for _, col := range crd.Spec.Versions[0].AdditionalPrinterColumns {
			name := col.Name
			if col.Priority == 1 {
				name += "*"
			}
			got = append(got, name)
		}
		if diff := cmp.Diff(want[crd.Spec.Names.Kind], got); diff != "" {
			t.Errorf("%s columns (-want,+got; * = wide):\n%s", crd.Spec.Names.Kind, diff)
		}
		if crd.Spec.Group == autoscalingv1.Group {
			// Cluster Autoscaler's API keeps its own names (no category).
			continue
		}
		if cats := crd.Spec.Names.Categories; len(cats) != 1 || cats[0] != "karpenter" {
			t.Errorf("%s categories = %v, want [karpenter]", crd.Spec.Names.Kind, cats)
		}
	}
}
