package options

import "fmt"

// defaultCPURequests is upstream's --cpu-requests default (millicores).
const defaultCPURequests = 1000

// inertGates are feature gates karp accepts, so upstream's chart and
// environment work unchanged, but whose features it does not have yet
// (none at the moment: every upstream gate has its feature).
var inertGates []string

// Inert names each setting that is accepted but changes nothing in karp
// yet, when it is set away from upstream's default, so the operator can
// say so at start instead of silently ignoring it.
func (o *Options) Inert() []string {
	var out []string
	if o.CPURequests != defaultCPURequests {
		out = append(out, fmt.Sprintf("--cpu-requests=%d: karp does not size its parallelism from it", o.CPURequests))
	}
	if !o.IgnoreDRARequests {
		out = append(out, "--ignore-dra-requests=false: karp does not simulate dynamic resource allocation; pods with resourceClaims are reported, not provisioned for")
	}
	if o.SchedulerConfig != nil {
		for _, profile := range o.SchedulerConfig.Unapplied {
			out = append(out, fmt.Sprintf("--scheduler-config: profile %s uses kube-scheduler's System default spread (ScheduleAnyway only); karp, like upstream Karpenter, does not apply it", profile))
		}
	}
	for _, gate := range inertGates {
		if o.FeatureGates.Enabled(gate) {
			out = append(out, fmt.Sprintf("feature gate %s=true: karp does not implement %s yet", gate, gate))
		}
	}
	if o.CloudProvider == CloudProviderAWS && o.AWS != nil {
		out = append(out, o.AWS.Inert()...)
	}
	return out
}
