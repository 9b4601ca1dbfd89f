// Package status registers the status-condition metrics upstream
// Karpenter publishes (through operatorpkg) for NodeClaims, NodePools and
// Nodes, with its names, labels and buckets; pkg/metrics/status does the
// work for any kind (the AWS provider registers EC2NodeClasses with it):
//
//   - operator_<kind>_status_condition_count and
//     operator_<kind>_status_condition_current_status_seconds, labelled
//     namespace, name, type, status, reason, plus for NodeClaims their
//     NodeClass and NodePool labels (karpenter_kwok_sh_kwoknodeclass,
//     karpenter_sh_nodepool) and for Nodes those and
//     karpenter_sh_initialized;
//   - operator_<kind>_termination_current_time_seconds while an object is
//     terminating, operator_<kind>_termination_duration_seconds once it
//     is gone;
//   - operator_<kind>_status_condition_transitions_total and
//     _transition_seconds;
//   - for NodeClaims and NodePools (not Nodes, as upstream) the deprecated
//     operator_status_condition_* and operator_termination_* series,
//     labelled group and kind.
//
// The gauges are computed when /metrics is scraped, from the manager's
// cache; the transitions and terminations come from one watch controller
// per kind. None of it writes to the objects.
package status
