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
// The package may import pkg/apis and pkg/cloudprovider (for the provider
// decorator in cloudprovider.go), never pkg/controllers.
package metrics
