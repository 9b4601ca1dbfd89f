// Package cloudprovider is the contract between karp's controllers and the
// infrastructure that launches nodes: the CloudProvider interface, the
// instance-type vocabulary it speaks (aliases of pkg/scheduling's types), the
// typed errors controllers branch on, and the small pure helpers every
// provider shares to pick an offering for a NodeClaim and label the result.
//
// Providers live in sub-packages: fake (in-memory, for controller tests) and
// kwok (fake Nodes on a real API server, for local clusters and e2e). Every
// provider passes the behaviour table in pkg/test/contract.
//
// Import rule: this package may import pkg/apis, pkg/scheduling,
// k8s.io/api, apimachinery and controller-runtime's client types, never
// pkg/controllers or a cloud SDK. The helpers in selection.go are pure.
//
// Invariants:
//   - A CloudProvider's methods are safe for concurrent use.
//   - Instance types returned by GetInstanceTypes are shared: callers must
//     not mutate them (copy first, as simulations do).
//   - Delete and Get report a missing instance only with a
//     NodeClaimNotFoundError, so callers can tell "gone" from "broke".
package cloudprovider
