// Package install holds the end-to-end test of karp installed from its
// Helm charts: the rendered charts/karp-crd and charts/karp are
// server-side applied into the local control plane, and karp-controller
// runs as a process authenticated as the chart's ServiceAccount (a
// TokenRequest token) with the environment the chart's Deployment gives
// its container. The provisioning and consolidation seed scenarios must
// pass under that identity (the generated RBAC suffices), and the
// identity must not reach beyond what karp does (no Secrets, no Lease but
// its own).
package install
