package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// manifestExtensions are the file name endings read from directories.
var manifestExtensions = []string{".yaml", ".yml", ".json"}

// expandPaths lists the files to read: files as given, directories walked
// recursively for manifest files in lexical order.
func expandPaths(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		if p == StdinPath {
			out = append(out, p)
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		if !info.IsDir() {
			out = append(out, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && hasManifestExtension(path) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading manifests under %s: %w", p, err)
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}

func hasManifestExtension(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	for _, e := range manifestExtensions {
		if ext == e {
			return true
		}
	}
	return false
}

// document is one non-empty document of a file, as JSON.
type document struct {
	source Source
	json   []byte
}

// splitDocuments returns the documents of a file as JSON. A file whose
// first non-blank byte is '{' or '[' is a stream of JSON values; anything
// else is multi-document YAML.
func splitDocuments(file string, data []byte) ([]document, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return splitJSON(file, trimmed)
	}
	return splitYAML(file, data)
}

func splitJSON(file string, data []byte) ([]document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []document
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		src := Source{File: file, Doc: len(out) + 1, Item: -1}
		if err != nil {
			return nil, &Error{Source: src, Err: fmt.Errorf("parsing JSON: %w", err)}
		}
		out = append(out, document{source: src, json: raw})
	}
}

func splitYAML(file string, data []byte) ([]document, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []document
	for {
		chunk, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		src := Source{File: file, Doc: len(out) + 1, Item: -1}
		if err != nil {
			return nil, &Error{Source: src, Err: fmt.Errorf("reading YAML: %w", err)}
		}
		if isBlankYAML(chunk) {
			continue
		}
		js, err := yaml.YAMLToJSONStrict(chunk)
		if err != nil {
			return nil, &Error{Source: src, Err: fmt.Errorf("parsing YAML: %w", err)}
		}
		if string(js) == "null" {
			continue
		}
		out = append(out, document{source: src, json: js})
	}
}

// isBlankYAML reports whether a document holds only whitespace, comments
// and separators.
func isBlankYAML(chunk []byte) bool {
	for _, line := range bytes.Split(chunk, []byte("\n")) {
		l := bytes.TrimSpace(line)
		if len(l) == 0 || l[0] == '#' || bytes.Equal(l, []byte("---")) {
			continue
		}
		return false
	}
	return true
}
