// Package metrics owns karp's Prometheus vocabulary: the namespace, the
// subsystem and label-name constants, and the metrics shared by several
// controllers, all named as upstream Karpenter names them so its Grafana
// dashboards and alerts work unchanged against karp.
//
// Nothing here registers itself: pkg/operator calls Register once with
// controller-runtime's registry (plus any collectors a controller declares
// for itself). Labels are bounded (nodepool, zone, capacity_type, reason,
// resource_type, method, error); never node, pod or instance IDs.
//
// The package imports nothing of karp's but pkg/apis: the cloud provider
// decorator that feeds the cloud provider metrics and the offering gauges
// lives beside the provider contract (pkg/cloudprovider/metrics), so the
// vocabulary sits below everything that uses it.
package metrics
