package provisioning

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/solverinput"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// gather builds the solver input. Pods whose volumes cannot be resolved
// are left out and returned with the reason.
func (p *Provisioner) gather(ctx context.Context, pods []*corev1.Pod, nodes []*simulation.Node,
	stateNodes []*state.StateNode) (*simulation.Input, []simulation.PodError, error) {
	pools, typesByPool, unevaluated := p.nodePools(ctx)
	if unevaluated != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNodeOverlaysUnevaluated, unevaluated)
	}
	// The solver counts the capacity of each NodePool's nodes against its
	// limits; in-flight NodeClaims need theirs filled in first.
	fillInFlight(nodes, stateNodes, typesByPool)
	in := &simulation.Input{Nodes: nodes, NodePools: pools, DaemonSets: p.cluster.DaemonSets(), ClusterLimits: p.opts.ClusterLimits,
		Options: simulation.Options{PreferencePolicy: p.opts.PreferencePolicy, MinValuesPolicy: p.opts.MinValuesPolicy}}
	if err := solverinput.Cluster(ctx, p.kubeClient, in); err != nil {
		return nil, nil, err
	}
	// Pods karp does not provision for (invalid node constraints, or
	// asking for no karp node) are left out before anything else.
	pods, errs := validatePods(ctx, pods)
	volumes, ignored, err := p.volumeRequirements(ctx, append(pods, reschedulablePods(nodes)...))
	if err != nil {
		return nil, nil, err
	}
	in.VolumeRequirements = volumes
	for _, pod := range pods {
		if _, bad := ignored[pod.UID]; !bad {
			in.Pods = append(in.Pods, pod)
		}
	}
	in.DefaultSpread = solverinput.DefaultSpread(ctx, p.kubeClient, p.opts.DefaultSpread, append(slices.Clone(in.Pods), reschedulablePods(nodes)...))
	for _, pe := range ignored {
		errs = append(errs, pe)
	}
	// Nodes whose CSINodes limit how many volumes they attach take no pod
	// that would go over (existing nodes only: see pkg/solverinput).
	if err := solverinput.FillVolumeLimits(ctx, p.kubeClient, in); err != nil {
		return nil, nil, err
	}
	return in, errs, nil
}

// nodePools returns the NodePools that may launch (Ready, not deleting,
// not static) with their instance types, and the instance types of every
// NodePool by name. A NodePool whose instance types cannot be read, or
// whose requirements leave none it could launch (NoCompatibleInstanceTypes
// event), is skipped for this pass and noted in p.skipped.
func (p *Provisioner) nodePools(ctx context.Context) ([]*simulation.NodePool, map[string][]*scheduling.InstanceType, error) {
	var out []*simulation.NodePool
	typesByPool := map[string][]*scheduling.InstanceType{}
	p.skipped = map[string]string{}
	for _, np := range p.cluster.NodePools() {
		launchable := solverinput.Launchable(np)
		// Instance types of every NodePool, launchable or not, describe
		// its in-flight NodeClaims.
		types, err := p.cloudProvider.GetInstanceTypes(ctx, np)
		if cloudprovider.IsUnevaluatedNodePoolError(err) {
			// The NodeOverlays changed and are not evaluated yet: the
			// whole pass waits, rather than place pods on stale prices
			// or send them to another NodePool meanwhile.
			return nil, nil, err
		}
		if err != nil {
			log.FromContext(ctx).Error(err, "skipping nodepool, listing instance types", "NodePool", np.Name)
			if launchable {
				p.skipped[np.Name] = skippedListingTypes
			}
			continue
		}
		typesByPool[np.Name] = types
		if !launchable {
			if simulation.LaunchesNodes(np) {
				p.skipped[np.Name] = notReady(np)
			}
			continue
		}
		if !hasCompatibleInstanceTypes(np, types) {
			log.FromContext(ctx).Info("skipping, nodepool requirements filtered out all instance types", "NodePool", np.Name)
			p.recorder.NoCompatibleInstanceTypes(np)
			p.skipped[np.Name] = skippedNoCompatibleTypes
			continue
		}
		out = append(out, &simulation.NodePool{NodePool: np, InstanceTypes: types})
	}
	return out, typesByPool, nil
}

// ErrNodeOverlaysUnevaluated is the pass's error while the NodeOverlay
// controller has not evaluated the overlays as they are now; Reconcile
// waits and retries.
var ErrNodeOverlaysUnevaluated = errors.New("waiting on the nodeoverlay evaluation")

// notReady says why a dynamic NodePool launches nothing: its Ready
// condition, as the NodePool controller wrote it.
func notReady(np *karpv1.NodePool) string {
	cond := np.StatusConditions().Get(karpv1.ConditionTypeReady)
	if cond == nil {
		return "not Ready yet (no Ready condition)"
	}
	msg := "not Ready (" + cond.Reason
	if cond.Message != "" {
		msg += ": " + cond.Message
	}
	return msg + ")"
}

// fillInFlight gives NodeClaims that have not launched yet the allocatable
// every instance type they list guarantees (the element-wise minimum), so
// pods nominated to them, or pods pending again after a restart, are
// counted against capacity that will exist instead of launching more; and,
// for NodePool limits, the capacity of the largest type they list (the
// element-wise maximum), since the provider may launch any of them.
func fillInFlight(nodes []*simulation.Node, stateNodes []*state.StateNode, typesByPool map[string][]*scheduling.InstanceType) {
	for i, n := range nodes {
		sn := stateNodes[i]
		if len(n.Allocatable) > 0 || sn.NodeClaim == nil {
			continue
		}
		listed := listedTypes(state.NodeClaimRequirements(sn.NodeClaim), typesByPool[sn.NodePool()])
		if len(listed) == 0 {
			continue
		}
		n.Allocatable = minimum(listed, func(it *scheduling.InstanceType) corev1.ResourceList { return it.Allocatable })
		n.Capacity = simulation.MaximumCapacity(listed)
	}
}

func listedTypes(reqs scheduling.Requirements, types []*scheduling.InstanceType) []*scheduling.InstanceType {
	req := reqs.Get(corev1.LabelInstanceTypeStable)
	if req == nil {
		return nil
	}
	var out []*scheduling.InstanceType
	for _, it := range types {
		if req.Has(it.Name) {
			out = append(out, it)
		}
	}
	return out
}

func minimum(types []*scheduling.InstanceType, get func(*scheduling.InstanceType) corev1.ResourceList) corev1.ResourceList {
	out := get(types[0]).DeepCopy()
	for _, it := range types[1:] {
		list := get(it)
		for name, q := range out {
			other, ok := list[name]
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

// reschedulablePods are the pods of nodes being deleted that the solver
// places again.
func reschedulablePods(nodes []*simulation.Node) []*corev1.Pod {
	var out []*corev1.Pod
	for _, n := range nodes {
		if !n.MarkedForDeletion {
			continue
		}
		for _, pod := range n.Pods {
			if state.IsReschedulable(pod) {
				out = append(out, pod)
			}
		}
	}
	return out
}
