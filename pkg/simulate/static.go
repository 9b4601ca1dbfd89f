package simulate

import (
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/manifest"
	"github.com/karp-autoscaler/karp/pkg/render"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// staticNode is one node the static controller would launch for a static
// NodePool: its NodeClaim, rendered by simulation.StaticNodeClaims as the
// controller renders it, and the node kube-scheduler sees once it exists.
type staticNode struct {
	claim *simulation.NodeClaim
	node  *simulation.Node
}

// staticNodes launches what each static NodePool misses of its replicas
// (capped by limits.nodes; its Nodes among the manifests count), as the
// nodepool.static controller does, on the instance type it would pick.
// in supplies the DaemonSets, LimitRanges, options and existing nodes.
func staticNodes(in simulation.Input, pools []*simulation.NodePool, existing []*manifest.NodeState) ([]staticNode, []string) {
	var out []staticNode
	var warnings []string
	for _, p := range pools {
		np := p.NodePool
		target, all, active := int64(*np.Spec.Replicas), int64(0), int64(0)
		for _, ns := range existing {
			if ns.Node.Labels[karpv1.NodePoolLabelKey] != np.Name {
				continue
			}
			all++
			if ns.Node.DeletionTimestamp == nil {
				active++
			}
		}
		limit, limited := int64(-1), false
		if q, ok := np.Spec.Limits[corev1.ResourceName("nodes")]; ok {
			limit, limited = q.Value(), true
		}
		if limited && limit < target {
			warnings = append(warnings, fmt.Sprintf("NodePool %s: spec.replicas is %d but limits.nodes is %d: the NodePool keeps at most %d nodes",
				np.Name, target, limit, limit))
			target = limit
		}
		missing := target - active
		if limited {
			// Leaving nodes hold their place under the limit until gone.
			missing = min(missing, limit-all)
		}
		if missing <= 0 {
			continue
		}
		claims, why := simulation.StaticNodeClaims(in, p, int(missing))
		if why != "" {
			warnings = append(warnings, fmt.Sprintf("NodePool %s: static, launches nothing: %s", np.Name, why))
			continue
		}
		for _, nc := range claims {
			out = append(out, staticNode{claim: nc, node: launchedNode(nc, np.Name+"-static-"+strconv.Itoa(len(out)))})
		}
	}
	return out, warnings
}

// launchedNode is the node a static NodeClaim becomes once it launched on
// its cheapest choice: the NodeClaim's labels plus the instance type's and
// the offering's, the template's taints (its startup taints gone, as on an
// initialized node), the type's capacity and allocatable. The solver adds
// the DaemonSets' pods that would run there.
func launchedNode(nc *simulation.NodeClaim, name string) *simulation.Node {
	obj := render.NodeClaim(nc)
	labels := nc.InstanceType.Requirements.Labels()
	maps.Copy(labels, obj.Labels)
	labels[corev1.LabelHostname] = name
	if nc.Offering != nil {
		labels[corev1.LabelTopologyZone] = nc.Offering.Zone
		labels[scheduling.LabelCapacityType] = nc.Offering.CapacityType
	}
	return &simulation.Node{Name: name, Labels: labels, Taints: obj.Spec.Taints, Capacity: nc.InstanceType.Capacity,
		Allocatable: nc.InstanceType.Allocatable, Initialized: true, Launched: true}
}
