package v1_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

func userManifests(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile("testdata/ec2nodeclasses.yaml")
	if err != nil {
		t.Fatal(err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := decoder.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if len(u.Object) != 0 {
			out = append(out, u)
		}
	}
	if len(out) == 0 {
		t.Fatal("no manifests in testdata/ec2nodeclasses.yaml")
	}
	return out
}

// The EC2NodeClasses users bring from Karpenter are accepted unchanged and
// every value they set survives the API server (none is pruned; the
// server only adds defaults).
func TestUserManifestsAccepted(t *testing.T) {
	ctx := t.Context()
	for _, u := range userManifests(t) {
		t.Run(u.GetName(), func(t *testing.T) {
			sent, err := u.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if err := kubeClient.Create(ctx, u); err != nil {
				t.Fatalf("rejected: %v", err)
			}
			t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), u) })
			var sentSpec, storedSpec map[string]interface{}
			mustSpec(t, sent, &sentSpec)
			stored, err := u.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			mustSpec(t, stored, &storedSpec)
			for _, missing := range notIn(sentSpec, storedSpec, "spec") {
				t.Errorf("%s was pruned or changed", missing)
			}
		})
	}
}

// The manifests decode strictly into the Go types: no field is unknown.
func TestUserManifestsDecodeIntoTypes(t *testing.T) {
	for _, u := range userManifests(t) {
		raw, err := u.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		nc := &awsv1.EC2NodeClass{}
		if err := yaml.UnmarshalStrict(raw, nc); err != nil {
			t.Errorf("%s: %v", u.GetName(), err)
		}
	}
}

func mustSpec(t *testing.T, raw []byte, into *map[string]interface{}) {
	t.Helper()
	var obj struct {
		Spec map[string]interface{} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	*into = obj.Spec
}

// notIn returns the paths of values in sent that stored lacks or holds
// differently; stored may have more (defaults).
func notIn(sent, stored interface{}, path string) []string {
	switch s := sent.(type) {
	case map[string]interface{}:
		st, ok := stored.(map[string]interface{})
		if !ok {
			return []string{path}
		}
		var out []string
		for k, v := range s {
			out = append(out, notIn(v, st[k], path+"."+k)...)
		}
		return out
	case []interface{}:
		st, ok := stored.([]interface{})
		if !ok || len(st) != len(s) {
			return []string{path}
		}
		var out []string
		for i := range s {
			out = append(out, notIn(s[i], st[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	default:
		if fmt.Sprint(sent) != fmt.Sprint(stored) {
			return []string{path}
		}
		return nil
	}
}
