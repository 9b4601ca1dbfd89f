package v1

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// kubeletFieldsData lists the kubelet's KubeletConfiguration fields with
// the JSON kind of each (see the file's header for its source).
//
//go:embed kubeletfields.txt
var kubeletFieldsData string

// kubeletFields maps each kubelet configuration field to its JSON kind.
var kubeletFields = func() map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(kubeletFieldsData, "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, kind, ok := strings.Cut(line, " ")
		if !ok {
			panic(fmt.Sprintf("kubeletfields.txt: malformed line %q", line))
		}
		out[name] = kind
	}
	return out
}()

// validateKubeletField checks a field karp passes through: that the kubelet
// has it and that its value is of the field's JSON kind. Upstream decodes
// the whole map strictly into the kubelet's own type; karp checks names
// and the top-level kind of each value, not what nests inside.
func validateKubeletField(name string, raw []byte) error {
	kind, ok := kubeletFields[name]
	if !ok {
		return fmt.Errorf("spec.kubelet: unknown field %q", name)
	}
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return nil
	}
	var v interface{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("spec.kubelet.%s: %w", name, err)
	}
	if kindOf(v, kind) {
		return nil
	}
	return fmt.Errorf("spec.kubelet.%s: %s is not of kind %s", name, string(raw), kind)
}

func kindOf(v interface{}, kind string) bool {
	switch kind {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "duration":
		s, ok := v.(string)
		if !ok {
			return false
		}
		_, err := time.ParseDuration(s)
		return err == nil
	case "object":
		_, ok := v.(map[string]interface{})
		return ok
	case "array":
		_, ok := v.([]interface{})
		return ok
	}
	return false
}
