package explain

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReadDump decodes a cluster dump: YAML or JSON documents, each an object
// or a List of objects, as `kubectl get nodes,nodeclaims,nodepools,pods,
// pdb,daemonsets -A -o yaml` writes. Kinds the scheme does not know are
// skipped and named in the returned warnings.
func ReadDump(scheme *runtime.Scheme, r io.Reader, source string) ([]client.Object, []string, error) {
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	docs := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReader(r), 4096)
	var (
		out      []client.Object
		warnings []string
	)
	var add func(raw []byte, where string) error
	add = func(raw []byte, where string) error {
		if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
			return nil
		}
		obj, gvk, err := decoder.Decode(raw, nil, nil)
		if runtime.IsNotRegisteredError(err) {
			warnings = append(warnings, fmt.Sprintf("%s: skipped %s %s: kind not used by karp", where, gvk.GroupVersion(), gvk.Kind))
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if list, ok := obj.(*corev1.List); ok {
			for i, item := range list.Items {
				if err := add(item.Raw, fmt.Sprintf("%s item %d", where, i)); err != nil {
					return err
				}
			}
			return nil
		}
		if list, ok := obj.(*metav1.List); ok {
			for i, item := range list.Items {
				if err := add(item.Raw, fmt.Sprintf("%s item %d", where, i)); err != nil {
					return err
				}
			}
			return nil
		}
		o, ok := obj.(client.Object)
		if !ok {
			return fmt.Errorf("%s: %s is not an object", where, gvk.Kind)
		}
		out = append(out, o)
		return nil
	}
	for n := 1; ; n++ {
		var raw runtime.RawExtension
		err := docs.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: document %d: %w", source, n, err)
		}
		if err := add(raw.Raw, fmt.Sprintf("%s: document %d", source, n)); err != nil {
			return nil, nil, err
		}
	}
	return out, warnings, nil
}

// ReadDumpFiles reads dumps from files ("-" is stdin).
func ReadDumpFiles(scheme *runtime.Scheme, stdin io.Reader, paths ...string) ([]client.Object, []string, error) {
	var (
		out      []client.Object
		warnings []string
	)
	for _, path := range paths {
		r := stdin
		if path != "-" {
			f, err := os.Open(path)
			if err != nil {
				return nil, nil, err
			}
			defer f.Close()
			r = f
		}
		objs, w, err := ReadDump(scheme, r, path)
		if err != nil {
			return nil, nil, err
		}
		out, warnings = append(out, objs...), append(warnings, w...)
	}
	return out, warnings, nil
}

// NewObjectReader serves the dump's objects to New.
func NewObjectReader(scheme *runtime.Scheme, objs []client.Object) (client.Reader, error) {
	return newObjectReader(scheme, objs)
}
