package main

import "strings"

// operatorpkgSource names the module whose status controllers build these
// metrics at runtime (the version sigs.k8s.io/karpenter's go.mod requires at
// the listed commit), and where.
const operatorpkgSource = "github.com/awslabs/operatorpkg@v0.0.0-20260708223819-4da4c353c5fa/status/metrics.go"

// statusController is one operatorpkg status controller upstream runs: the
// lower-cased kind (the metric subsystem prefix), its extra metric labels
// (status.WithLabels, already in Prometheus form) and whether it also feeds
// the kind-agnostic deprecated series (status.EmitDeprecatedMetrics).
type statusController struct {
	kind       string
	labels     []string
	deprecated bool
}

// statusControllers are the controllers core's controllers.go (NodeClaim,
// NodePool, Node) and the provider's controllers.go (EC2NodeClass) start.
// The NodeClaim and Node controllers label by the NodeClass label of every
// supported NodeClass (karpenter.k8s.aws/ec2nodeclass under the provider)
// and the NodePool; the Node's also by karpenter.sh/initialized.
var statusControllers = []statusController{
	{kind: "nodeclaim", labels: []string{"karpenter_k8s_aws_ec2nodeclass", "karpenter_sh_nodepool"}, deprecated: true},
	{kind: "nodepool", deprecated: true},
	{kind: "node", labels: []string{"karpenter_k8s_aws_ec2nodeclass", "karpenter_sh_nodepool", "karpenter_sh_initialized"}},
	{kind: "ec2nodeclass", deprecated: true},
}

// operatorpkgMetrics lists the series operatorpkg's status controllers
// register at runtime, by the constructors in status/metrics.go.
func operatorpkgMetrics() []metric {
	var out []metric
	deprecated := false
	for _, c := range statusControllers {
		out = append(out, statusMetrics(c.kind+"_", c.labels)...)
		deprecated = deprecated || c.deprecated
	}
	if deprecated {
		out = append(out, statusMetrics("", []string{"group", "kind"})...)
	}
	return out
}

func statusMetrics(prefix string, extra []string) []metric {
	with := func(base ...string) []string { return append(base, extra...) }
	m := func(name, typ string, labels []string) metric {
		return metric{Name: "operator_" + prefix + name, Type: typ, Labels: labels, Source: operatorpkgSource}
	}
	return []metric{
		m("status_condition_transition_seconds", "histogram", with("type", "status")),
		m("status_condition_count", "gauge", with("namespace", "name", "type", "status", "reason")),
		m("status_condition_current_status_seconds", "gauge", with("namespace", "name", "type", "status", "reason")),
		m("status_condition_transitions_total", "counter", with("type", "status", "reason")),
		m("termination_current_time_seconds", "gauge", with("namespace", "name")),
		m("termination_duration_seconds", "histogram", append([]string{}, extra...)),
	}
}

// operatorpkgEvents lists the reasons operatorpkg's status controllers
// publish: Finalized when a finalizer leaves an object, and one reason per
// status condition type on each transition (the condition types of the
// four kinds, so not listed one by one).
func operatorpkgEvents() []event {
	src := strings.TrimSuffix(operatorpkgSource, "metrics.go") + "controller.go"
	return []event{{Reason: "Finalized", Source: src}}
}
