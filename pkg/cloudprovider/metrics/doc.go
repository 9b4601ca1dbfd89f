// Package metrics decorates a cloud provider with upstream Karpenter's
// cloud provider metrics (karpenter_cloudprovider_duration_seconds,
// karpenter_cloudprovider_errors_total) and the offering price and
// availability gauges, beside the provider contract as upstream keeps it.
// The metrics themselves, like every name karp exports, are declared in
// pkg/metrics, which imports no cloud provider.
package metrics
