// Package manifest reads the Kubernetes manifests a user would apply
// (files or directories of multi-document YAML or JSON, `kind: List`
// included) and turns them into the objects karp reasons about: NodePools
// KWOKNodeClasses, NodeOverlays, CapacityBuffers and ProvisioningRequests
// validated and defaulted by their CRDs' schemas and CEL rules, PodTemplates, and workloads (Deployments, ReplicaSets, StatefulSets, Jobs)
// expanded into the pods their controllers would create.
//
// It is used by offline tools (`karp simulate`), so it never talks to an
// API server. Every error names the file, the document (1-based, counting
// non-empty documents) and, inside a List, the item index, plus the field
// at fault. Kinds it does not use are listed as warnings and skipped.
//
// Invariants:
//   - Decoding is strict: unknown or misspelt fields are errors, as with
//     `kubectl apply` (server-side field validation Strict).
//   - Expansion is deterministic: generated names, hashes and UIDs derive
//     from the workload's namespace and name, so the same manifests always
//     give the same pods.
package manifest
