package provisioningrequest

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/solverinput"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// bookedTaintKey keeps the request's pods, in its solve, off the nodes
// booked for other requests (the taint exists only in the solver's copy).
const bookedTaintKey = karpv1.Group + "/provisioning-request-booked"

// solve places the request's pods on the existing nodes and, with launch,
// on new NodeClaims of the NodePools, and judges the result against the
// NodePools' and the cluster's limits.
func (c *Controller) solve(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, pods []*corev1.Pod, launch bool) (verdict, error) {
	// 1. The cluster as the provisioner sees it.
	nodes, stateNodes := c.cluster.ProvisioningSnapshot()
	byName := map[string]*karpv1.NodePool{}
	typesByPool := map[string][]*scheduling.InstanceType{}
	var pools []*simulation.NodePool
	// 2. With launch, the NodePools that may launch and their instance types.
	if launch {
		for _, np := range c.cluster.NodePools() {
			byName[np.Name] = np
			types, err := c.cloudProvider.GetInstanceTypes(ctx, np)
			if cloudprovider.IsUnevaluatedNodePoolError(err) {
				return verdict{}, fmt.Errorf("listing instance types of nodepool %s: %w", np.Name, err)
			}
			if err != nil {
				log.FromContext(ctx).Error(err, "skipping nodepool, listing instance types", "NodePool", np.Name)
				continue
			}
			typesByPool[np.Name] = types
			if solverinput.Launchable(np) {
				pools = append(pools, &simulation.NodePool{NodePool: np, InstanceTypes: types})
			}
		}
	}
	fillInFlight(nodes, stateNodes, typesByPool)
	holdBookings(nodes, stateNodes, string(pr.UID))
	in := simulation.Input{Pods: pods, Nodes: nodes, NodePools: pools, DaemonSets: c.cluster.DaemonSets(),
		ClusterLimits: c.opts.ClusterLimits, Options: c.opts.Solver}
	if err := solverinput.Cluster(ctx, c.kubeClient, &in); err != nil {
		return verdict{}, err
	}
	c.reserveBookings(ctx, &in, client.ObjectKeyFromObject(pr))
	// 3. Solve and judge.
	return fit(ctx, in, launch, byName), nil
}

// fit solves in and judges the result; with launch, the new NodeClaims are
// admitted against the NodePools' (pools, by name, as they are now) and
// the cluster's limits, counting the nodes in.Nodes.
func fit(ctx context.Context, in simulation.Input, launch bool, pools map[string]*karpv1.NodePool) verdict {
	var limits *simulation.Limits
	if launch {
		limits = simulation.NewLimits(in.Nodes, in.ClusterLimits)
	}
	return judge(simulation.Solve(ctx, in), len(in.Pods), limits, pools)
}

// holdBookings taints, in the solver's copy, the nodes booked for a request
// other than self whose pods have not all arrived (fewer of the pods on
// the nodes consume it than it asked for), so the request's pods do not
// count their room. Once a booking's pods have landed, what is left on its
// nodes is free room like any other.
func holdBookings(nodes []*simulation.Node, stateNodes []*state.StateNode, self string) {
	consumed := map[string]int{}
	for _, n := range nodes {
		for _, pod := range n.Pods {
			if name := autoscalingv1.ConsumedRequest(pod.Annotations); name != "" {
				consumed[pod.Namespace+"/"+name]++
			}
		}
	}
	for i, n := range nodes {
		nc := stateNodes[i].NodeClaim
		if nc == nil || nc.Annotations[BookedAnnotationKey] != "true" || nc.Labels[RequestUIDLabelKey] == self {
			continue
		}
		want, err := strconv.Atoi(nc.Annotations[PodCountAnnotationKey])
		if err == nil && consumed[nc.Annotations[RequestAnnotationKey]] >= want {
			continue
		}
		n.Taints = append(append([]corev1.Taint(nil), n.Taints...),
			corev1.Taint{Key: bookedTaintKey, Effect: corev1.TaintEffectNoSchedule})
	}
}

// reserveBookings places the pods other requests booked and that have not
// arrived on the nodes first, as bound pods (buffers.Reserve), so this
// request's pods do not count their room. Requests holding NodeClaims of
// their own are kept off by holdBookings instead; booked pods that no
// longer fit anywhere hold nothing.
func (c *Controller) reserveBookings(ctx context.Context, in *simulation.Input, self types.NamespacedName) {
	if c.bookings == nil {
		return
	}
	buffers.Reserve(ctx, *in, c.bookings.Pods(buffers.Consumed(c.cluster.ProvisionablePods(), in.Nodes), func(b buffers.Booking) bool {
		return b.Key != self && !b.OnNodeClaims
	}))
}

// fillInFlight gives NodeClaims that have not launched yet the allocatable
// every instance type they list guarantees and, for the limits, the
// capacity of the largest (as the provisioner does).
func fillInFlight(nodes []*simulation.Node, stateNodes []*state.StateNode, typesByPool map[string][]*scheduling.InstanceType) {
	for i, n := range nodes {
		sn := stateNodes[i]
		if len(n.Allocatable) > 0 || sn.NodeClaim == nil {
			continue
		}
		req := state.NodeClaimRequirements(sn.NodeClaim).Get(corev1.LabelInstanceTypeStable)
		if req == nil {
			continue
		}
		var listed []*scheduling.InstanceType
		for _, it := range typesByPool[sn.NodePool()] {
			if req.Has(it.Name) {
				listed = append(listed, it)
			}
		}
		if len(listed) == 0 {
			continue
		}
		n.Allocatable = minimumAllocatable(listed)
		n.Capacity = simulation.MaximumCapacity(listed)
	}
}

func minimumAllocatable(types []*scheduling.InstanceType) corev1.ResourceList {
	out := types[0].Allocatable.DeepCopy()
	for _, it := range types[1:] {
		for name, q := range out {
			other, ok := it.Allocatable[name]
			if !ok {
				delete(out, name)
				continue
			}
			if other.Cmp(q) < 0 {
				out[name] = other.DeepCopy()
			}
		}
	}
	return out
}
