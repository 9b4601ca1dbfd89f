// Command crdpatch adds to the CRDs controller-gen writes the validation
// that kubebuilder markers cannot express because the Go types come from
// k8s.io/api (corev1.Taint), are map values (NodePool template labels) or
// have custom JSON (the EC2NodeClass's open kubelet map).
//
// Usage: go run ./hack/crdpatch <dir>
//
// It rewrites every <group>_<plural>.yaml in dir that it has patches for
// and fails if a patched schema path does not exist, so a renamed field
// cannot silently drop its validation.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

const (
	// qualifiedNamePattern is a label or taint key: an optional DNS
	// subdomain prefix and '/', then a name.
	qualifiedNamePattern = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	// labelValuePattern is a label or taint value (possibly empty).
	labelValuePattern = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
)

// patch adds schema keywords to the schema node at path. A path is a
// dot-separated list of property names; "[]" steps into array items and
// "{}" into map values.
type patch struct {
	path string
	set  map[string]interface{}
	// rules replaces the rule of the CEL validation with the message (the
	// key); the validation must exist.
	rules map[string]string
}

func taintPatches(prefix string) []patch {
	var out []patch
	for _, field := range []string{"taints", "startupTaints"} {
		base := prefix + "." + field + ".[]"
		out = append(out,
			patch{path: base + ".key", set: map[string]interface{}{"minLength": 1, "maxLength": 316, "pattern": qualifiedNamePattern}},
			patch{path: base + ".value", set: map[string]interface{}{"maxLength": 63, "pattern": labelValuePattern}},
			patch{path: base + ".effect", set: map[string]interface{}{"enum": []interface{}{"NoSchedule", "PreferNoSchedule", "NoExecute"}}},
		)
	}
	return out
}

// validationsKey holds CEL rules; a patch appends its rules to the ones
// the markers generated instead of replacing them.
const validationsKey = "x-kubernetes-validations"

// patches lists, per CRD file name, the additions.
var patches = map[string][]patch{
	"karpenter.sh_nodepools.yaml": append(append(
		taintPatches("spec.template.spec"),
		patch{path: "spec.template.metadata.labels.{}", set: map[string]interface{}{"maxLength": 63, "pattern": labelValuePattern}}),
		awsLabelPatches("spec.template.spec.requirements", "spec.template.metadata.labels")...,
	),
	"karpenter.sh_nodeclaims.yaml": append(append(taintPatches("spec"), awsLabelPatches("spec.requirements", "")...),
		// A reserved launch's NodeClaim names its reservation with the
		// requirement karpenter.sh/reservation-id, which the marker shared
		// with NodePools restricts: NodeClaims (karp writes them) may
		// carry it, NodePools still may not (docs/controller.md).
		patch{path: "spec.requirements.[].key", rules: map[string]string{
			`label domain "karpenter.sh" is restricted`: `self in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool', 'karpenter.sh/reservation-id'] || !self.matches('^([^/]*[.])?karpenter[.]sh/')`,
		}}),
	// spec.kubelet is an open map of kubelet configuration fields, as
	// upstream's map[string]JSON makes it; karp's Go type is a struct with
	// custom JSON (see awsv1.KubeletConfiguration), which controller-gen
	// cannot describe.
	"karpenter.k8s.aws_ec2nodeclasses.yaml": {
		{path: "spec.kubelet", set: map[string]interface{}{"additionalProperties": map[string]interface{}{"x-kubernetes-preserve-unknown-fields": true}}},
	},
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdpatch <crd-dir>")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "crdpatch:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	for file, ps := range patches {
		if err := patchFile(filepath.Join(dir, file), ps); err != nil {
			return fmt.Errorf("patching %s: %w", file, err)
		}
	}
	return nil
}

func patchFile(path string, ps []patch) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd map[string]interface{}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	versions, _ := dig(crd, "spec", "versions").([]interface{})
	if len(versions) == 0 {
		return fmt.Errorf("no versions")
	}
	for _, v := range versions {
		root, ok := dig(v, "schema", "openAPIV3Schema").(map[string]interface{})
		if !ok {
			return fmt.Errorf("version without openAPIV3Schema")
		}
		for _, p := range ps {
			node, err := schemaAt(root, p.path)
			if err != nil {
				return err
			}
			for k, val := range p.set {
				if k == validationsKey {
					existing, _ := node[k].([]interface{})
					val = append(append([]interface{}(nil), existing...), val.([]interface{})...)
				}
				node[k] = val
			}
			if err := replaceRules(node, p); err != nil {
				return err
			}
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return fmt.Errorf("encoding: %w", err)
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

// replaceRules sets the rule of each CEL validation p.rules names by
// message, and fails when the node has no validation with that message.
func replaceRules(node map[string]interface{}, p patch) error {
	for message, rule := range p.rules {
		found := false
		validations, _ := node[validationsKey].([]interface{})
		for _, v := range validations {
			if m, ok := v.(map[string]interface{}); ok && m["message"] == message {
				m["rule"], found = rule, true
			}
		}
		if !found {
			return fmt.Errorf("schema path %s: no validation with message %q", p.path, message)
		}
	}
	return nil
}

// schemaAt walks a JSON schema along a patch path.
func schemaAt(root map[string]interface{}, path string) (map[string]interface{}, error) {
	node := root
	for _, step := range strings.Split(path, ".") {
		var next interface{}
		switch step {
		case "[]":
			next = node["items"]
		case "{}":
			next = node["additionalProperties"]
		default:
			next = dig(node, "properties", step)
		}
		m, ok := next.(map[string]interface{})
		if !ok {
			return nil, fmt.Errorf("schema path %s: no %q", path, step)
		}
		node = m
	}
	return node, nil
}

func dig(v interface{}, keys ...string) interface{} {
	for _, k := range keys {
		m, ok := v.(map[string]interface{})
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
