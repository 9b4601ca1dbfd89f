// Package crds embeds the CustomResourceDefinitions of karp's APIs, as
// generated from pkg/apis by `make generate` (controller-gen plus
// hack/crdpatch). Tests install them into their API servers and `karp up`
// installs them into the local cluster.
package crds

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed *.yaml
var files embed.FS

// All returns every CRD (NodePool, NodeClaim, NodeOverlay, KWOKNodeClass, EC2NodeClass,
// ProvisioningRequest, CapacityBuffer),
// decoded, in
// file-name order. Each call returns fresh objects the caller may modify.
func All() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing embedded CRDs: %w", err)
	}
	sort.Strings(names)
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, name := range names {
		raw, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		out = append(out, crd)
	}
	return out, nil
}
