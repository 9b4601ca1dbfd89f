package provisioning

import (
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// NewNodeClaim renders the NodeClaim to create for a solver decision, as
// the provisioner does; the disruption controller launches replacements
// with it so they look exactly like provisioned capacity.
func NewNodeClaim(nc *simulation.NodeClaim) *karpv1.NodeClaim {
	return newNodeClaim(nc, nc.NodePool, providerLabelKeys(nc))
}
