package localcluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

func TestReadManifestsOrdersDependenciesFirst(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
# a comment-only document is skipped
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
`,
		"b.yml": `apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata: {name: default}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
`,
		"c.json": `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}`,
		"d.yaml": `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: aws}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
`,
		"ignored.md": "not a manifest",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := ReadManifests([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	sortForApply(objs)
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	want := []string{"Namespace/team", "PriorityClass/high", "KWOKNodeClass/default", "EC2NodeClass/default", "NodePool/default", "NodePool/aws", "Deployment/web"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("apply order (-want +got):\n%s", diff)
	}
}

func TestReadManifestsRejectsObjectsWithoutKind(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("metadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifests([]string{path}); err == nil {
		t.Fatal("want an error for an object without apiVersion/kind")
	}
}

func TestExamplesDecode(t *testing.T) {
	objs, err := ReadManifests([]string{fixtures.Example(t, "")})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) == 0 {
		t.Fatal("no objects in examples/")
	}
}
