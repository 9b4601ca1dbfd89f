// Package garbagecollection holds no code. On AWS karp collects leaked
// instances and NodeClaims whose instance is gone with the core garbage
// collector (pkg/controllers/nodeclaim/garbagecollection) over the AWS
// provider's List, Get and Delete, where upstream Karpenter's AWS provider
// runs its own instance.garbagecollection controller. This package's tests
// confirm, against a real API server and the stateful EC2 fake, that the
// pair behaves as upstream's: an instance tagged for this cluster and a
// NodePool with no NodeClaim naming it is terminated (and its Node
// deleted) once older than 30 seconds, a younger one and other clusters'
// or untagged instances are left alone, and a registered NodeClaim whose
// instance was terminated outside karp is deleted. They also confirm that
// instances are matched to NodeClaims by instance ID (a providerID
// recorded without its zone, or an instance named only by the NodeClaim's
// Node, keeps its instance), with EC2 answers lacking the per-instance
// zone and ignoring DescribeInstances filters.
package garbagecollection
