package v1_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The EC2NodeClass and NodePool docs/aws.md tells users to apply are
// accepted by the API server as written.
func TestDocsExamplesAccepted(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "aws.md"))
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, block := range strings.Split(string(raw), "```yaml\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if !strings.Contains(block, "apiVersion:") {
			continue
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(block)), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := decoder.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("decoding an example: %v", err)
			}
			if len(u.Object) != 0 {
				objs = append(objs, u)
			}
		}
	}
	kinds := map[string]bool{}
	for _, u := range objs {
		u.SetName("docs-" + u.GetName())
		if err := kubeClient.Create(t.Context(), u); err != nil {
			t.Errorf("%s %s rejected: %v", u.GetKind(), u.GetName(), err)
			continue
		}
		kinds[u.GetKind()] = true
		t.Cleanup(func() { _ = kubeClient.Delete(context.WithoutCancel(t.Context()), u) })
	}
	if !kinds["EC2NodeClass"] || !kinds["NodePool"] {
		t.Errorf("docs/aws.md examples created %v, want an EC2NodeClass and a NodePool", kinds)
	}
}
