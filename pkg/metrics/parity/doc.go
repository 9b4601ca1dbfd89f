// Package parity holds only tests: they build karp's whole controller list
// (core, kwok and the AWS provider's metric definitions), record every
// collector registered, and compare the metric names and label names, and
// the event reasons karp declares, with upstream Karpenter v1.14's (the
// listings hack/upstreammetrics writes into pkg/metrics/testdata). An
// upstream metric or reason karp lacks must be allow-listed with why
// (testdata/not-in-karp.yaml), and an allow-listed one karp gains must
// leave the list.
package parity
