// Package charts renders and lints karp's Helm charts (charts/karp and
// charts/karp-crd) with Helm's Go SDK, the way `helm template` and `helm
// lint` do, without a cluster or a network. The chart tests and the
// install end-to-end suite use it.
package charts
