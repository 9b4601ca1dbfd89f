package v1_test

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// upstreamCRD is upstream Karpenter's EC2NodeClass CRD at the commit named
// in testdata/upstream/SOURCE (chart version 1.14.1).
const upstreamCRD = "testdata/upstream/karpenter.k8s.aws_ec2nodeclasses.yaml"

// karpCRD is the CRD `make generate` writes from this package's types.
const karpCRD = "../../crds/karpenter.k8s.aws_ec2nodeclasses.yaml"

// schemaDifferencesAllowed are the differences between karp's and
// upstream's EC2NodeClass schemas, keyed as schemaFacts names them (a key
// ending in "/*" covers a path and everything below it), each with why
// karp differs. Everything else must be identical, in both directions, so
// a manifest upstream accepts is accepted and one it rejects is rejected.
// All are in status, which only karp's controller writes.
var schemaDifferencesAllowed = map[string]string{
	"v1 status.conditions x-kubernetes-list-type":     "karp-only: conditions are a list map keyed by type so status patches merge per condition; the controller never writes two of one type",
	"v1 status.conditions x-kubernetes-list-map-keys": "karp-only: the key of the conditions list map above",
	"v1 status.placementGroup/*":                      "karp-only: the placement group placementGroupSelector resolved to (ec2nodeclass_placementgroup.go), shown in status; upstream keeps it in memory",
}

// allowed returns the allow-list entry covering a fact key, or "".
func allowed(key string) string {
	if _, ok := schemaDifferencesAllowed[key]; ok {
		return key
	}
	for entry := range schemaDifferencesAllowed {
		if prefix, ok := strings.CutSuffix(entry, "/*"); ok && (strings.HasPrefix(key, prefix+" ") || strings.HasPrefix(key, prefix+".")) {
			return entry
		}
	}
	return ""
}

// TestSchemaMatchesUpstream walks both CRDs' openAPIV3Schema and compares,
// at every property path, the keywords that decide what the API server
// accepts: type, format, enum, pattern, bounds, required lists, defaults,
// nullability, pruning and list/map markers, and the CEL rules with their
// messages.
func TestSchemaMatchesUpstream(t *testing.T) {
	want := schemaFacts(t, upstreamCRD)
	got := schemaFacts(t, karpCRD)
	var unlisted []string
	for key, w := range want {
		g, ok := got[key]
		switch {
		case !ok:
			unlisted = appendUnlisted(unlisted, key, fmt.Sprintf("upstream %s, karp has none", w))
		case g != w:
			unlisted = appendUnlisted(unlisted, key, fmt.Sprintf("upstream %s, karp %s", w, g))
		}
	}
	for key, g := range got {
		if _, ok := want[key]; !ok {
			unlisted = appendUnlisted(unlisted, key, fmt.Sprintf("karp %s, upstream has none", g))
		}
	}
	sort.Strings(unlisted)
	for _, d := range unlisted {
		t.Error(d)
	}
	// An entry that no longer covers a difference is stale.
	used := map[string]bool{}
	for _, facts := range []map[string]string{want, got} {
		for key := range facts {
			if entry := allowed(key); entry != "" && want[key] != got[key] {
				used[entry] = true
			}
		}
	}
	for entry := range schemaDifferencesAllowed {
		if !used[entry] {
			t.Errorf("%s is allow-listed but covers no difference; remove it from schemaDifferencesAllowed", entry)
		}
	}
}

func appendUnlisted(out []string, key, what string) []string {
	if allowed(key) != "" {
		return out
	}
	return append(out, key+": "+what)
}

// checkedKeywords are the schema keywords compared (description and
// title are not: they do not change what is accepted).
var checkedKeywords = []string{
	"type", "format", "enum", "pattern", "default", "nullable",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
	"minLength", "maxLength", "minItems", "maxItems", "uniqueItems",
	"minProperties", "maxProperties", "required",
	"x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string",
	"x-kubernetes-embedded-resource", "x-kubernetes-list-type", "x-kubernetes-list-map-keys",
	"x-kubernetes-map-type",
}

// schemaFacts flattens a CRD's schemas into "<version> <path> <keyword>"
// -> JSON value. Paths are property names joined by '.', with "[]" for
// array items and "{}" for map values; a CEL rule is keyed by its rule
// text and valued by its message. Keywords that combine schemas (allOf,
// anyOf, oneOf, not) are kept whole.
func schemaFacts(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	facts := map[string]string{}
	for _, v := range crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			t.Fatalf("%s: version %s has no schema", path, v.Name)
		}
		var node map[string]interface{}
		b, err := json.Marshal(v.Schema.OpenAPIV3Schema)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &node); err != nil {
			t.Fatal(err)
		}
		walkSchema(facts, v.Name+" ", "", node)
	}
	return facts
}

func walkSchema(facts map[string]string, prefix, path string, node map[string]interface{}) {
	at := prefix + path
	if path == "" {
		at = prefix + "<root>"
	}
	facts[at+" exists"] = "true"
	for _, kw := range append(checkedKeywords, "allOf", "anyOf", "oneOf", "not") {
		if v, ok := node[kw]; ok {
			facts[at+" "+kw] = mustJSON(v)
		}
	}
	if rules, ok := node["x-kubernetes-validations"].([]interface{}); ok {
		for _, r := range rules {
			rule, _ := r.(map[string]interface{})
			key := fmt.Sprintf("%s rule %v", at, rule["rule"])
			rest := map[string]interface{}{}
			for k, v := range rule {
				if k != "rule" {
					rest[k] = v
				}
			}
			facts[key] = mustJSON(rest)
		}
	}
	join := func(step string) string {
		if path == "" {
			return step
		}
		return path + "." + step
	}
	if props, ok := node["properties"].(map[string]interface{}); ok {
		for name, child := range props {
			if m, ok := child.(map[string]interface{}); ok {
				walkSchema(facts, prefix, join(name), m)
			}
		}
	}
	if items, ok := node["items"].(map[string]interface{}); ok {
		walkSchema(facts, prefix, join("[]"), items)
	}
	switch ap := node["additionalProperties"].(type) {
	case map[string]interface{}:
		walkSchema(facts, prefix, join("{}"), ap)
	case bool:
		facts[at+" additionalProperties"] = fmt.Sprint(ap)
	}
}

func mustJSON(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(b))
}
