package main

// upstreamVersion is the sigs.k8s.io/karpenter version in go.mod, recorded
// in the generated file.
const upstreamVersion = "v1.13.0"
