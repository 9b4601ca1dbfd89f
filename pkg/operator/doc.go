// Package operator builds the karp controller process: the scheme, the
// controller-runtime manager (cache with karp's field indexes, leader
// election on a Lease, /healthz and /readyz probes, the Prometheus metrics
// endpoint), the structured logger, the cloud provider named by the
// options (for AWS, the SDK clients it hands to aws.NewProvider), and
// registers the controller list from pkg/controllers followed by the
// provider's own controllers.
//
// It is the only package (with cmd) that imports pkg/controllers. Options
// come in explicitly (pkg/options); nothing is read from context
// or package-level state except controller-runtime's metrics registry,
// which the metrics endpoint serves.
package operator
