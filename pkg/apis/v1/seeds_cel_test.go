package v1_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

// decodeManifests splits a multi-document YAML file into objects.
func decodeManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := decoder.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("decoding %s: %v", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetNamespace() == "" && !clusterScoped[u.GetKind()] {
			u.SetNamespace("default")
		}
		out = append(out, u)
	}
}

var clusterScoped = map[string]bool{"NodePool": true, "NodeClaim": true, "KWOKNodeClass": true, "PriorityClass": true}

// TestSeedManifestsAreAccepted applies every manifest users bring from the
// seed scenarios, unchanged, and expects the API server to take them all.
func TestSeedManifestsAreAccepted(t *testing.T) {
	ctx := t.Context()
	paths, err := filepath.Glob(filepath.Join(fixtures.Example(t, ""), "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no seed manifests found under examples/")
	}
	sort.Strings(paths)
	kinds := map[string]int{}
	for _, path := range paths {
		for _, obj := range decodeManifests(t, path) {
			name := filepath.Base(path) + "/" + obj.GetKind() + "/" + obj.GetName()
			if err := kubeClient.Create(ctx, obj); err != nil {
				t.Errorf("%s rejected: %v", name, err)
				continue
			}
			kinds[obj.GetKind()]++
			t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), obj) })
		}
	}
	for _, kind := range []string{"NodePool", "KWOKNodeClass", "Deployment", "DaemonSet", "PodDisruptionBudget", "PriorityClass"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s among the seed manifests; created %v", kind, kinds)
		}
	}
	t.Logf("created from %d files: %v", len(paths), kinds)
}

// TestSeedNodePoolsDecodeIntoTypes checks that karp's Go types hold every
// field of the seed NodePools: strict decoding fails on any field the types
// would silently drop.
func TestSeedNodePoolsDecodeIntoTypes(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(fixtures.Example(t, ""), "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	decoded := 0
	for _, path := range paths {
		for _, obj := range decodeManifests(t, path) {
			if obj.GetKind() != "NodePool" {
				continue
			}
			raw, err := obj.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			nodePool := &karpv1.NodePool{}
			if err := yaml.UnmarshalStrict(raw, nodePool); err != nil {
				t.Errorf("%s: %s: %v", filepath.Base(path), obj.GetName(), err)
			}
			decoded++
		}
	}
	if decoded == 0 {
		t.Fatal("no NodePools among the seed manifests")
	}
}
