package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the server-side apply field manager for manifests that
// `karp up --apply` applies.
const FieldManager = "karp-up"

// applyOrder ranks kinds that others depend on; everything else comes after,
// in file order.
var applyOrder = map[string]int{
	"Namespace":                0,
	"CustomResourceDefinition": 1,
	"PriorityClass":            2,
	"ServiceAccount":           3,
	"ConfigMap":                3,
	"Secret":                   3,
	"KWOKNodeClass":            4,
	"EC2NodeClass":             4,
	"NodePool":                 5,
}

// ReadManifests decodes every object in the given YAML or JSON files; a
// directory contributes its *.yaml, *.yml and *.json files in name order.
func ReadManifests(paths []string) ([]*unstructured.Unstructured, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		for _, e := range entries {
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		decoded, err := decodeManifests(raw)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", f, err)
		}
		objs = append(objs, decoded...)
	}
	return objs, nil
}

func decodeManifests(raw []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(u.Object) == 0 {
			continue // an empty document between separators
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("object %q has no apiVersion or kind", u.GetName())
		}
		objs = append(objs, u)
	}
}

// sortForApply orders objects so dependencies come first, keeping file
// order otherwise.
func sortForApply(objs []*unstructured.Unstructured) {
	rank := func(u *unstructured.Unstructured) int {
		if r, ok := applyOrder[u.GetKind()]; ok {
			return r
		}
		return len(applyOrder)
	}
	sort.SliceStable(objs, func(i, j int) bool { return rank(objs[i]) < rank(objs[j]) })
}

// Apply server-side applies the objects in the manifests at paths to the
// cluster behind cfg, dependencies first, writing one line per object to
// out. Namespaced objects without a namespace go to "default".
func Apply(ctx context.Context, cfg *rest.Config, paths []string, out io.Writer) error {
	objs, err := ReadManifests(paths)
	if err != nil {
		return err
	}
	sortForApply(objs)
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("building client: %w", err)
	}
	for _, u := range objs {
		namespaced, err := cl.IsObjectNamespaced(u)
		if err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		if namespaced && u.GetNamespace() == "" {
			u.SetNamespace("default")
		}
		err = cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership)
		if err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), client.ObjectKeyFromObject(u), err)
		}
		name := u.GetName()
		if u.GetNamespace() != "" {
			name = u.GetNamespace() + "/" + name
		}
		fmt.Fprintf(out, "applied %s %s\n", strings.ToLower(u.GetKind()), name)
	}
	return nil
}
