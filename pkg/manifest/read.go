package manifest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf16"

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

// document is one non-empty document of a file, as JSON. A document that
// is an array (a JSON array or a YAML sequence) is one document per
// element, each with its item index.
type document struct {
	source Source
	json   []byte
}

// splitDocuments returns the documents of a file as JSON, read the way
// `kubectl apply -f` reads a file: a byte order mark selects UTF-8 or
// UTF-16 and is dropped; a file whose first non-blank byte is '{' or '['
// is a stream of JSON values, which may go on as YAML documents after its
// first value (as apimachinery's YAMLOrJSONDecoder allows); anything else
// is multi-document YAML split by apimachinery's YAMLReader, so CRLF line
// endings and a comment after "---" work and other text after "---" is an
// error. Empty, comment-only and null documents are skipped.
//
// karp also reads a document that is an array as its elements, where
// kubectl stops with an error: a JSON array of objects is a common way to
// save several objects (`jq -s`), and each element is read as if it were
// its own document.
func splitDocuments(file string, data []byte) ([]document, error) {
	data, err := decodeBOM(data)
	if err != nil {
		return nil, &Error{Source: Source{File: file, Doc: 1, Item: -1}, Err: err}
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	var docs []document
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		docs, err = splitJSON(file, trimmed)
	} else {
		docs, err = splitYAML(file, data, 0)
	}
	if err != nil {
		return nil, err
	}
	return expandArrays(docs)
}

// decodeBOM drops a UTF-8 byte order mark and decodes UTF-16 text that
// starts with one, as kubectl does for the files it reads (Windows tools
// write both).
func decodeBOM(data []byte) ([]byte, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xef, 0xbb, 0xbf}):
		return data[3:], nil
	case bytes.HasPrefix(data, []byte{0xff, 0xfe}):
		return decodeUTF16(data[2:], binary.LittleEndian)
	case bytes.HasPrefix(data, []byte{0xfe, 0xff}):
		return decodeUTF16(data[2:], binary.BigEndian)
	}
	return data, nil
}

func decodeUTF16(data []byte, order binary.ByteOrder) ([]byte, error) {
	if len(data)%2 != 0 {
		return nil, errors.New("reading UTF-16: odd number of bytes")
	}
	units := make([]uint16, len(data)/2)
	for i := range units {
		units[i] = order.Uint16(data[2*i:])
	}
	return []byte(string(utf16.Decode(units))), nil
}

// splitJSON reads a stream of JSON values. Like kubectl, a stream that
// holds at most one JSON value and then something that is not JSON is
// read as YAML from there (a JSON object followed by "---" and YAML
// documents, or a file that starts with a YAML flow mapping).
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
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) && len(out) <= 1 {
			rest, yerr := splitYAML(file, data[dec.InputOffset():], len(out))
			if yerr == nil {
				return append(out, rest...), nil
			}
		}
		if err != nil {
			return nil, &Error{Source: src, Err: fmt.Errorf("parsing JSON: %w", err)}
		}
		out = append(out, document{source: src, json: raw})
	}
}

// splitYAML reads multi-document YAML; the documents are numbered after
// the skip documents read before it.
func splitYAML(file string, data []byte, skip int) ([]document, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []document
	for {
		chunk, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		src := Source{File: file, Doc: skip + len(out) + 1, Item: -1}
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

// expandArrays replaces each document that is an array by its elements.
func expandArrays(docs []document) ([]document, error) {
	var out []document
	for _, d := range docs {
		if trimmed := bytes.TrimLeft(d.json, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '[' {
			out = append(out, d)
			continue
		}
		var items []json.RawMessage
		if err := json.Unmarshal(d.json, &items); err != nil {
			return nil, &Error{Source: d.source, Err: fmt.Errorf("parsing an array of objects: %w", err)}
		}
		for i, item := range items {
			if string(item) == "null" {
				continue
			}
			out = append(out, document{source: d.source.item(i), json: item})
		}
	}
	return out, nil
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
