package charts

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// The charts, by directory name under charts/.
const (
	Karp    = "karp"
	KarpCRD = "karp-crd"
)

// Dir is the directory of the named chart in this repository.
func Dir(chart string) string {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Join(filepath.Dir(file), chart)
	}
	// Built with -trimpath (make sets it), the source path is relative to
	// the module: the charts are under the module root, the first parent
	// of the working directory (a test's package directory) with go.mod.
	if dir, err := os.Getwd(); err == nil {
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				return filepath.Join(d, "charts", chart)
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return filepath.Join("charts", chart)
}

// Release names one rendering of a chart.
type Release struct {
	Name      string
	Namespace string
	// Values override the chart's values.yaml, as `--values` would.
	Values map[string]any
	// APIVersions are extra API versions the cluster is taken to serve
	// (`helm template --api-versions`), e.g. "monitoring.coreos.com/v1".
	APIVersions []string
	// IncludeCRDs renders the chart's crds/ directory too, first.
	IncludeCRDs bool
}

// Render renders the named chart as `helm template` does: the values are
// coalesced with values.yaml and validated against values.schema.json,
// then every template is rendered with Helm's engine. The manifest holds
// the templates' output in file-name order, without NOTES.txt.
func Render(chart string, rel Release) (string, error) {
	chrt, err := loader.LoadDir(Dir(chart))
	if err != nil {
		return "", fmt.Errorf("loading chart %s: %w", chart, err)
	}
	caps := common.DefaultCapabilities.Copy()
	caps.APIVersions = append(caps.APIVersions, rel.APIVersions...)
	opts := common.ReleaseOptions{Name: rel.Name, Namespace: rel.Namespace, Revision: 1, IsInstall: true}
	vals, err := chartutil.ToRenderValues(chrt, rel.Values, opts, caps)
	if err != nil {
		return "", fmt.Errorf("chart %s: %w", chart, err)
	}
	rendered, err := engine.Render(chrt, vals)
	if err != nil {
		return "", fmt.Errorf("rendering chart %s: %w", chart, err)
	}
	var docs []string
	if rel.IncludeCRDs {
		for _, crd := range chrt.CRDObjects() {
			docs = append(docs, fmt.Sprintf("# Source: %s\n%s", crd.Filename, crd.File.Data))
		}
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		body := strings.TrimSpace(rendered[name])
		if body == "" || path.Base(name) == "NOTES.txt" || strings.HasPrefix(path.Base(name), "_") {
			continue
		}
		docs = append(docs, fmt.Sprintf("# Source: %s\n%s", name, body))
	}
	return strings.Join(docs, "\n---\n") + "\n", nil
}

// Objects renders the named chart and decodes every object in it.
func Objects(chart string, rel Release) ([]*unstructured.Unstructured, error) {
	manifest, err := Render(chart, rel)
	if err != nil {
		return nil, err
	}
	return Decode(manifest)
}

// Decode splits a multi-document manifest into objects, skipping empty
// documents.
func Decode(manifest string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	decoder := yaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		obj := map[string]any{}
		if err := decoder.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("decoding manifest: %w", err)
		}
		if len(obj) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: obj})
	}
}

// Lint lints the named chart with values as `helm lint --strict` does and
// returns every message at warning level or above as one error.
func Lint(chart string, namespace string, values map[string]any) error {
	linter := lint.RunAll(Dir(chart), values, namespace)
	var msgs []string
	for _, msg := range linter.Messages {
		if msg.Severity >= support.WarningSev {
			msgs = append(msgs, msg.Error())
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("helm lint %s:\n  %s", chart, strings.Join(msgs, "\n  "))
	}
	return nil
}
