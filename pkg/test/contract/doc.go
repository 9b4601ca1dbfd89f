// Package contract is the behaviour table every CloudProvider must pass.
// A provider's tests call Run with a constructor for a fresh Subject; each
// behaviour runs as a subtest against its own provider.
//
// The behaviours speak only through the CloudProvider interface, so a
// failure means the provider breaks what karp's controllers rely on:
// Create hydrates and is idempotent, missing instances are reported with
// NodeClaimNotFoundError, impossible requests with
// InsufficientCapacityError, List sees what Create made, and every provider
// ranks offerings the same way (cloudprovider.LaunchCandidates).
//
// It is a test kit (it imports testing and pkg/test): only providers'
// tests import it, never product code (a depguard rule in .golangci.yml).
package contract
