package manifest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/karp-autoscaler/karp/pkg/apis/crds"
)

// crdValidator checks a custom resource the way the API server does on
// create: unknown fields rejected (strict field validation), metadata
// coerced, CRD defaults applied, then the OpenAPI schema, list-type
// invariants and x-kubernetes-validations (CEL) rules enforced.
type crdValidator struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// newCRDValidators builds a validator for every served version of karp's
// embedded CRDs.
func newCRDValidators() (map[schema.GroupVersionKind]*crdValidator, error) {
	all, err := crds.All()
	if err != nil {
		return nil, err
	}
	out := map[schema.GroupVersionKind]*crdValidator{}
	for _, crd := range all {
		for i := range crd.Spec.Versions {
			v, err := newCRDValidator(crd, &crd.Spec.Versions[i])
			if err != nil {
				return nil, fmt.Errorf("preparing the %s schema: %w", crd.Name, err)
			}
			out[v.gvk] = v
		}
	}
	return out, nil
}

func newCRDValidator(crd *apiextensionsv1.CustomResourceDefinition, version *apiextensionsv1.CustomResourceDefinitionVersion) (*crdValidator, error) {
	if version.Schema == nil {
		return nil, fmt.Errorf("version %s has no schema", version.Name)
	}
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(version.Schema, internal, nil); err != nil {
		return nil, fmt.Errorf("converting the schema: %w", err)
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("building the structural schema: %w", err)
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, fmt.Errorf("pruning defaults: %w", err)
	}
	sv, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("building the schema validator: %w", err)
	}
	return &crdValidator{
		gvk:        schema.GroupVersionKind{Group: crd.Spec.Group, Version: version.Name, Kind: crd.Spec.Names.Kind},
		namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		structural: s,
		schema:     sv,
		cel:        cel.NewValidator(s, true, celconfig.PerCallLimit),
	}, nil
}

// admit defaults obj in place and returns every reason the API server
// would refuse to create it, or nil.
func (v *crdValidator) admit(obj map[string]interface{}) error {
	// 1. The status subresource is reset on create.
	delete(obj, "status")
	// 2. Strict field validation: anything the schema prunes is unknown.
	unknown := structuralpruning.PruneWithOptions(obj, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	if len(unknown) > 0 {
		msgs := make([]error, 0, len(unknown))
		for _, path := range unknown {
			msgs = append(msgs, fmt.Errorf("unknown field %q", path))
		}
		return errors.Join(msgs...)
	}
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, v.structural)
	if err := schemaobjectmeta.Coerce(nil, obj, v.structural, true, false); err != nil {
		return err
	}
	var errs field.ErrorList
	// 3. Names from generateName are given before validation, as on create.
	if md, ok := obj["metadata"].(map[string]interface{}); ok {
		if gen, _ := md["generateName"].(string); gen != "" && md["name"] == nil {
			md["name"] = gen + suffixes(gen, 1)[0]
		}
	}
	// 4. Defaults, then validation on the defaulted object.
	structuraldefaulting.Default(obj, v.structural)
	u := &unstructured.Unstructured{Object: obj}
	errs = append(errs, validation.ValidateObjectMetaAccessor(u, v.namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, v.schema)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, obj, v.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	if len(errs) > 0 {
		// The API server skips CEL rules when the schema already failed.
		return errs.ToAggregate()
	}
	// Offline admission has no caller's context: the evaluation is pure and
	// bounded by the CEL cost budget, as in the API server.
	ctx := context.Background() //nolint:forbidigo // offline admission is the root context
	celErrs, _ := v.cel.Validate(ctx, nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return celErrs.ToAggregate()
}

// Admit validates and defaults one of karp's custom resources (JSON or
// YAML) the way the API server would on create, returning the defaulted
// object as JSON. Tools use it to check objects they generate.
func Admit(data []byte) ([]byte, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	var tm typeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return nil, err
	}
	validators, err := newCRDValidators()
	if err != nil {
		return nil, err
	}
	v, ok := validators[schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)]
	if !ok {
		return nil, fmt.Errorf("%s %s is not one of karp's custom resources", tm.APIVersion, tm.Kind)
	}
	var obj map[string]interface{}
	if err := utiljson.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	if err := v.admit(obj); err != nil {
		return nil, err
	}
	return json.Marshal(obj)
}
