// Package scale is the end-to-end scale suite (`make bench-e2e`, outside
// `make test`): on the local control plane with karp-controller on the
// kwok provider, it scales the benchmark's diverse pod mix
// (testdata/bench/pods-diverse-*.json: zonal and hostname spread,
// affinity, anti-affinity) to KARP_SCALE_PODS pods, down to 30% of them and
// back, and logs what each step took and cost (see docs/performance.md).
// It reports figures and asserts only that every step finishes.
package scale
