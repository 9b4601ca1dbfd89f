package v1_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// upstreamHashes is testdata/upstream-hashes.yaml, written by
// hack/upstreamhash with upstream Karpenter's own NodePool.Hash().
type upstreamHashes struct {
	Source      string            `json:"source"`
	HashVersion string            `json:"hashVersion"`
	Hashes      map[string]string `json:"hashes"`
}

type templateCase struct {
	Name     string                   `json:"name"`
	Template karpv1.NodeClaimTemplate `json:"template"`
}

func readYAML(t *testing.T, name string, into any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Fatalf("parsing %s: %v", name, err)
	}
}

// TestTemplateHashMatchesUpstream checks that karp stamps the hash upstream
// Karpenter stamps, so NodeClaims launched by upstream are not drifted when
// karp takes over.
func TestTemplateHashMatchesUpstream(t *testing.T) {
	var golden upstreamHashes
	readYAML(t, "upstream-hashes.yaml", &golden)
	var cases []templateCase
	readYAML(t, "templates.yaml", &cases)

	if golden.HashVersion != karpv1.NodePoolHashVersion {
		t.Fatalf("upstream hash version %s (%s), karp stamps %s", golden.HashVersion, golden.Source, karpv1.NodePoolHashVersion)
	}
	if len(cases) != len(golden.Hashes) {
		t.Errorf("%d templates but %d upstream hashes: regenerate testdata (see templates.yaml)", len(cases), len(golden.Hashes))
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			want, ok := golden.Hashes[tc.Name]
			if !ok {
				t.Fatalf("no upstream hash for %q: regenerate testdata (see templates.yaml)", tc.Name)
			}
			pool := karpv1.NodePool{Spec: karpv1.NodePoolSpec{Template: tc.Template}}
			if got := pool.Hash(); got != want {
				t.Errorf("hash = %s, upstream (%s) = %s", got, golden.Source, want)
			}
		})
	}
}
