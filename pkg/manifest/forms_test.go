package manifest

import (
	"strings"
	"testing"
	"unicode/utf16"

	"sigs.k8s.io/yaml"
)

// asJSON is a YAML manifest as one line of JSON.
func asJSON(t *testing.T, manifest string) string {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}

// utf16LE encodes s as UTF-16 little endian with a byte order mark, as
// Windows tools (PowerShell's Out-File, Notepad) write it.
func utf16LE(s string) string {
	var b strings.Builder
	b.WriteString("\xff\xfe")
	for _, u := range utf16.Encode([]rune(s)) {
		b.WriteByte(byte(u))
		b.WriteByte(byte(u >> 8))
	}
	return b.String()
}

// TestLoadReadsEveryFormKubectlReads loads one NodePool and one Deployment
// written in each form `kubectl apply -f` reads.
func TestLoadReadsEveryFormKubectlReads(t *testing.T) {
	npJSON, depJSON := asJSON(t, nodePool), asJSON(t, deployment)
	const bom = "\xef\xbb\xbf"
	tests := map[string]string{
		"YAML documents":                       nodePool + "---\n" + deployment,
		"YAML documents that are JSON objects": "---\n" + npJSON + "\n---\n" + deployment,
		"a JSON object, then YAML documents":   npJSON + "\n---\n" + deployment,
		"a stream of JSON objects":             npJSON + "\n" + depJSON,
		"a JSON array":                         "[" + npJSON + ",\n" + depJSON + "]\n",
		"a YAML document that is a JSON array": nodePool + "---\n[" + depJSON + "]\n",
		"a YAML sequence of objects":           "- " + strings.ReplaceAll(strings.TrimSpace(nodePool), "\n", "\n  ") + "\n- " + strings.ReplaceAll(strings.TrimSpace(deployment), "\n", "\n  ") + "\n",
		"a List":                               "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(nodePool), "\n", "\n  ") + "\n- " + strings.ReplaceAll(strings.TrimSpace(deployment), "\n", "\n  ") + "\n",
		"documents with only comments":         "# header\n---\n# nothing here\n---\n" + nodePool + "---\n   # indented comment\n---\n" + deployment + "---\n# trailer\n",
		"empty documents":                      "---\n---\n\n---\n" + nodePool + "---\n---\n" + deployment + "---\n",
		"CRLF line endings":                    strings.ReplaceAll(nodePool+"---\n"+deployment, "\n", "\r\n"),
		"a UTF-8 byte order mark":              bom + nodePool + "---\n" + deployment,
		"a UTF-8 byte order mark before JSON":  bom + npJSON + "\n" + depJSON,
		"UTF-16 with a byte order mark":        utf16LE(nodePool + "---\n" + deployment),
		"--- with a trailing comment":          "--- # the pool\n" + nodePool + "---   # the app\n" + deployment,
		"--- with trailing spaces":             nodePool + "---   \n" + deployment,
		"a document end marker":                nodePool + "...\n---\n" + deployment,
		"a YAML flow mapping first":            "{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: default}, spec: {template: {spec: {nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}, requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]}}}}\n---\n" + deployment,
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			dir := writeFiles(t, map[string]string{"m.yaml": content})
			set, err := Load(dir)
			if err != nil {
				t.Fatalf("loading: %v", err)
			}
			if len(set.NodePools) != 1 || len(set.Deployments) != 1 {
				t.Errorf("read %d NodePools and %d Deployments, want 1 and 1 (warnings: %v)", len(set.NodePools), len(set.Deployments), set.Warnings)
			}
		})
	}
}

// TestLoadRejectsTextAfterASeparator keeps kubectl's rule: only a comment
// may follow "---" on its line.
func TestLoadRejectsTextAfterASeparator(t *testing.T) {
	dir := writeFiles(t, map[string]string{"m.yaml": nodePool + "--- deployment\n" + deployment})
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "document separator") {
		t.Errorf("error = %v, want one naming the document separator", err)
	}
}
