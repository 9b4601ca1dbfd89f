// Package status exports, for any kind with status conditions, the
// status-condition and termination metrics upstream Karpenter publishes
// through operatorpkg's status controllers
// (github.com/awslabs/operatorpkg status/metrics.go and controller.go at
// v0.0.0-20260708223819-4da4c353c5fa), with their names, labels and
// buckets:
//
//   - operator_<kind>_status_condition_count and
//     operator_<kind>_status_condition_current_status_seconds (namespace,
//     name, type, status, reason, plus the kind's label keys as metric
//     labels), and operator_<kind>_termination_current_time_seconds
//     (namespace, name, label keys): gauges computed from the manager's
//     cache when /metrics is scraped, so deleted objects and past
//     conditions have no series;
//   - operator_<kind>_status_condition_transitions_total (type, status,
//     reason, label keys), operator_<kind>_status_condition_transition_seconds
//     (type, status, label keys) and operator_<kind>_termination_duration_seconds
//     (label keys): observed by a watch controller that remembers the
//     conditions it last saw on each object, and how long a terminating
//     object took once it is gone;
//   - for kinds upstream runs with EmitDeprecatedMetrics, the same series
//     under the kind-agnostic operator_status_condition_* and
//     operator_termination_* names, labelled group and kind instead of the
//     label keys.
//
// A status change is also recorded as an event named after the condition
// type, as upstream does. Nothing here writes to the objects. The kinds
// (NodeClaims, NodePools, Nodes, EC2NodeClasses) are defined in kinds.go;
// pkg/controllers/metrics/status registers the core ones and the AWS
// provider its EC2NodeClasses.
//
// The package sits below the controllers (it imports only pkg/apis of
// karp's), so a provider can register its own kinds without importing a
// core controller.
package status
