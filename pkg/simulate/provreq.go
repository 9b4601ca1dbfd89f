package simulate

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioningrequest"
	"github.com/karp-autoscaler/karp/pkg/manifest"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// RequestSummary is the dry-run's answer to one ProvisioningRequest.
type RequestSummary struct {
	// Request is "namespace/name".
	Request string `json:"request"`
	Class   string `json:"class"`
	// Pods counts the pods it asks for (count × template per podSet).
	Pods int `json:"pods"`
	// Fits: check-capacity, every pod fits on the nodes there are;
	// best-effort-atomic, every pod fits and every new node is within the
	// limits, so all are launched (otherwise none is).
	Fits bool `json:"fits"`
	// Message is the controller's Provisioned message for the outcome.
	Message string `json:"message"`
	// NodeClaims are what an atomic request that fits would launch.
	NodeClaims   []NodeClaimSummary `json:"nodeClaims,omitempty"`
	PricePerHour float64            `json:"pricePerHour"`
}

// judgeRequests answers each ProvisioningRequest karp serves with the
// provisioningrequest controller's decision, each on its own against the
// cluster once the pending pods are placed: nodes holds the existing and
// static nodes with the real pods the solve put there. New NodeClaims for
// pending pods are not counted (they do not exist yet when the request
// is tried), nor are other requests' launches.
func judgeRequests(ctx context.Context, set *manifest.Set, in simulation.Input, nodes []*simulation.Node) ([]RequestSummary, []string) {
	var out []RequestSummary
	var warnings []string
	templates := map[string]map[string]*corev1.PodTemplate{}
	for _, pt := range set.PodTemplates {
		if templates[pt.Namespace] == nil {
			templates[pt.Namespace] = map[string]*corev1.PodTemplate{}
		}
		templates[pt.Namespace][pt.Name] = pt
	}
	for _, pr := range set.ProvisioningRequests {
		key := pr.Namespace + "/" + pr.Name
		if !provisioningrequest.Served(pr) {
			warnings = append(warnings, fmt.Sprintf("ProvisioningRequest %s: class %q is not one karp serves: left to another autoscaler", key,
				pr.Spec.ProvisioningClassName))
			continue
		}
		s := RequestSummary{Request: key, Class: pr.Spec.ProvisioningClassName}
		pods, missing := provisioningrequest.Pods(pr, templates[pr.Namespace])
		if missing != "" {
			s.Message = fmt.Sprintf("PodTemplate %s/%s not found (the controller fails the request, %s, after a minute)", pr.Namespace, missing,
				provisioningrequest.ReasonFailedToCreatePods)
			out = append(out, s)
			continue
		}
		s.Pods = len(pods)
		req := in
		req.Pods, req.Nodes, req.DefaultSpread, req.Headroom = pods, nodes, nil, nil
		v := provisioningrequest.Fit(ctx, pr, req)
		s.Fits, s.Message = v.Fits, v.Message
		for _, nc := range v.Launch {
			sum, _ := claimSummary(nc)
			s.NodeClaims = append(s.NodeClaims, sum)
			s.PricePerHour += nc.Price
		}
		s.PricePerHour = roundCents(s.PricePerHour)
		out = append(out, s)
	}
	return out, warnings
}

// withPlacements copies nodes, each holding the pods res placed there
// besides its own.
func withPlacements(nodes []*simulation.Node, res *simulation.Result) []*simulation.Node {
	placed := map[*simulation.Node][]*corev1.Pod{}
	for _, ep := range res.ExistingNodes {
		for _, pod := range ep.Pods {
			// The provisioner nominates no buffer pod: its room is free.
			if !buffers.IsVirtual(pod) {
				placed[ep.Node] = append(placed[ep.Node], pod)
			}
		}
	}
	out := make([]*simulation.Node, len(nodes))
	for i, n := range nodes {
		cp := *n
		if extra := placed[n]; len(extra) > 0 {
			cp.Pods = append(slices.Clip(n.Pods), extra...)
		}
		out[i] = &cp
	}
	return out
}

// isAtomic reports whether the summary is of a best-effort-atomic request.
func (s RequestSummary) isAtomic() bool {
	return s.Class == autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp
}
