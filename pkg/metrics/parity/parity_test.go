package parity_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// upstreamMetrics is testdata/upstream-metrics-v1.14.yaml.
type upstreamMetrics struct {
	CoreCommit string `json:"coreCommit"`
	AWSRef     string `json:"awsRef"`
	AWSCommit  string `json:"awsCommit"`
	Metrics    []struct {
		Name   string   `json:"name"`
		Type   string   `json:"type"`
		Labels []string `json:"labels"`
		Source string   `json:"source"`
	} `json:"metrics"`
}

// upstreamEvents is testdata/upstream-events-v1.14.yaml.
type upstreamEvents struct {
	CoreCommit string `json:"coreCommit"`
	AWSRef     string `json:"awsRef"`
	AWSCommit  string `json:"awsCommit"`
	Events     []struct {
		Reason string `json:"reason"`
		Kind   string `json:"kind"`
		Source string `json:"source"`
	} `json:"events"`
}

// notInKarp is testdata/not-in-karp.yaml: what karp deliberately lacks.
type notInKarp struct {
	// Metrics maps an upstream metric karp does not register to why.
	Metrics map[string]string `json:"metrics"`
	// Labels maps an upstream metric whose label names karp's differ
	// from to why; the test still requires the names to match the
	// recorded karp labels, so a change on either side is seen.
	Labels map[string]struct {
		Karp []string `json:"karp"`
		Why  string   `json:"why"`
	} `json:"labels"`
	// Events maps an upstream event reason karp does not emit to why.
	Events map[string]string `json:"events"`
}

const testdata = "../testdata/"

func readYAML(t *testing.T, name string, into any) {
	t.Helper()
	raw, err := os.ReadFile(testdata + name)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(raw, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// wellKnownLabels is the {wellKnownLabels} placeholder of the upstream
// listing expanded from the well-known labels karp takes from upstream
// unchanged: the part after "/", snake_case.
func wellKnownLabels() []string {
	var out []string
	for k := range karpv1.WellKnownLabels {
		if _, name, ok := strings.Cut(k, "/"); ok {
			out = append(out, strings.ReplaceAll(strings.ToLower(name), "-", "_"))
		}
	}
	return out
}

func expand(labels []string) []string {
	var out []string
	for _, l := range labels {
		if l == "{wellKnownLabels}" {
			out = append(out, wellKnownLabels()...)
			continue
		}
		out = append(out, l)
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return slices.Compact(s)
}

func TestMetricsMatchUpstream(t *testing.T) {
	var up upstreamMetrics
	readYAML(t, "upstream-metrics-v1.14.yaml", &up)
	var allow notInKarp
	readYAML(t, "not-in-karp.yaml", &allow)
	karp := karpMetrics(t)

	seen := map[string]bool{}
	for _, m := range up.Metrics {
		if seen[m.Name] {
			continue
		}
		seen[m.Name] = true
		got, registered := karp[m.Name]
		why, allowed := allow.Metrics[m.Name]
		switch {
		case registered && allowed:
			t.Errorf("%s is registered now: remove it from not-in-karp.yaml (%q)", m.Name, why)
		case !registered && !allowed:
			t.Errorf("upstream's %s (%s, %s) is not registered; register it, or list it in not-in-karp.yaml with why", m.Name, m.Type, m.Source)
		case registered:
			want, gotSorted := expand(m.Labels), sorted(got)
			if diff, ok := allow.Labels[m.Name]; ok {
				if !slices.Equal(sorted(diff.Karp), gotSorted) {
					t.Errorf("%s labels %v, not-in-karp.yaml records %v (%s)", m.Name, gotSorted, sorted(diff.Karp), diff.Why)
				}
				if slices.Equal(want, gotSorted) {
					t.Errorf("%s labels match upstream now: remove it from not-in-karp.yaml's labels", m.Name)
				}
				continue
			}
			if !slices.Equal(want, gotSorted) {
				t.Errorf("%s labels:\n karp     %v\n upstream %v", m.Name, gotSorted, want)
			}
		}
	}
	for name := range allow.Metrics {
		if !seen[name] {
			t.Errorf("not-in-karp.yaml lists %s, which upstream does not define", name)
		}
	}
}

func TestEventReasonsMatchUpstream(t *testing.T) {
	var up upstreamEvents
	readYAML(t, "upstream-events-v1.14.yaml", &up)
	var allow notInKarp
	readYAML(t, "not-in-karp.yaml", &allow)
	karp := karpReasons(t)

	seen := map[string]bool{}
	for _, e := range up.Events {
		if seen[e.Reason] {
			continue
		}
		seen[e.Reason] = true
		why, allowed := allow.Events[e.Reason]
		switch {
		case karp[e.Reason] && allowed:
			t.Errorf("event reason %s is declared now: remove it from not-in-karp.yaml (%q)", e.Reason, why)
		case !karp[e.Reason] && !allowed:
			t.Errorf("upstream's event reason %s (%s, %s) has no Reason constant in karp; add it where karp has the behaviour, or list it in not-in-karp.yaml with why", e.Reason, e.Kind, e.Source)
		}
	}
	for reason := range allow.Events {
		if !seen[reason] {
			t.Errorf("not-in-karp.yaml lists event reason %s, which upstream does not emit", reason)
		}
	}
}

// karpReasons collects the values of karp's package-level string
// constants named Reason* in pkg/** (test files and pkg/test excluded):
// the convention every karp event reason follows.
func karpReasons(t *testing.T) map[string]bool {
	t.Helper()
	root := "../.."
	out := map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "test" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Reason") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, err := strconv.Unquote(lit.Value)
						if err != nil {
							return fmt.Errorf("%s: %w", fset.Position(lit.Pos()), err)
						}
						out[v] = true
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no Reason constants found under pkg/")
	}
	return out
}
