// Package status exports the status-condition metrics upstream Karpenter
// publishes (through operatorpkg) for NodeClaims and NodePools, with its
// names and labels:
//
//   - operator_<kind>_status_condition_count and
//     operator_<kind>_status_condition_current_status_seconds, labelled
//     namespace, name, type, status, reason, plus for NodeClaims their
//     NodeClass and NodePool labels (karpenter_kwok_sh_kwoknodeclass,
//     karpenter_sh_nodepool);
//   - the deprecated operator_status_condition_count and
//     operator_status_condition_current_status_seconds, labelled namespace,
//     name, type, status, reason, group and kind, which upstream still emits.
//
// The gauges are computed when /metrics is scraped, from the manager's
// cache, so deleted objects and past conditions have no series. The
// transition counters and histograms (operator_<kind>_status_condition_
// transitions_total and _transition_seconds, and the deprecated kind-less
// ones) come from two watch controllers that remember the conditions they
// last saw; a status change is also recorded as an event named after the
// condition type. None of it writes to the objects.
package status
