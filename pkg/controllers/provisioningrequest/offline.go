package provisioningrequest

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// The controller's decisions, for tools that judge requests without
// running it (`karp simulate`).

// Served reports whether karp serves the request's class.
func Served(pr *autoscalingv1.ProvisioningRequest) bool {
	class := pr.Spec.ProvisioningClassName
	return class == autoscalingv1.ProvisioningClassCheckCapacity || class == autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp
}

// Pods are the request's pods made from its PodTemplates (by name), as the
// controller makes them, or the name of the first PodTemplate missing.
func Pods(pr *autoscalingv1.ProvisioningRequest, templates map[string]*corev1.PodTemplate) ([]*corev1.Pod, string) {
	for _, ps := range pr.Spec.PodSets {
		if templates[ps.PodTemplateRef.Name] == nil {
			return nil, ps.PodTemplateRef.Name
		}
	}
	return expand(pr, templates), ""
}

// Verdict is the outcome of one attempt at a request.
type Verdict struct {
	// Fits is true when every pod was placed and every new NodeClaim is
	// within the NodePools' and the cluster's limits (all or nothing).
	Fits bool
	// Message says what was found or why not, as the Provisioned
	// condition's message has it.
	Message string
	// Launch are the NodeClaims an atomic request launches, as admitted.
	Launch []*simulation.NodeClaim
}

// Fit judges the request's pods in in as an attempt does: check-capacity
// against in.Nodes alone (in.NodePools are dropped: it launches nothing),
// best-effort-atomic against in.Nodes and in.NodePools, admitting the new
// NodeClaims against the NodePools' and in.ClusterLimits.
func Fit(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, in simulation.Input) Verdict {
	launch := pr.Spec.ProvisioningClassName == autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp
	pools := map[string]*karpv1.NodePool{}
	if launch {
		for _, p := range in.NodePools {
			pools[p.NodePool.Name] = p.NodePool
		}
	} else {
		in.NodePools = nil
	}
	v := fit(ctx, in, launch, pools)
	return Verdict{Fits: v.fits, Message: v.message, Launch: v.launch}
}
