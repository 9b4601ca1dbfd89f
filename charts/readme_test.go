package charts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/karp-autoscaler/karp/charts"
)

// TestREADMEListsEveryValue checks that each value values.schema.json
// accepts is listed in the chart's README (as `path`, or through all of
// its children).
func TestREADMEListsEveryValue(t *testing.T) {
	for _, chart := range []string{charts.Karp, charts.KarpCRD} {
		dir := charts.Dir(chart)
		readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, "values.schema.json"))
		if err != nil {
			t.Fatal(err)
		}
		var schema schemaNode
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatal(err)
		}
		var missing []string
		for name, prop := range schema.Properties {
			if name == "global" {
				continue
			}
			missing = append(missing, uncovered(string(readme), name, prop)...)
		}
		if len(missing) > 0 {
			t.Errorf("%s/README.md does not list: %s", chart, strings.Join(missing, ", "))
		}
	}
}

type schemaNode struct {
	Properties map[string]schemaNode `json:"properties"`
}

func uncovered(readme, path string, node schemaNode) []string {
	if strings.Contains(readme, "`"+path+"`") {
		return nil
	}
	if len(node.Properties) == 0 {
		return []string{path}
	}
	var out []string
	for name, child := range node.Properties {
		out = append(out, uncovered(readme, path+"."+name, child)...)
	}
	return out
}
