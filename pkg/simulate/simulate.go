package simulate

import (
	"context"
	"fmt"
	"io"
	"slices"

	corev1 "k8s.io/api/core/v1"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/manifest"
	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// HoursPerMonth converts $/hour into $/month (365 × 24 / 12).
const HoursPerMonth = 730

// Options are the inputs of one dry-run.
type Options struct {
	// Paths are manifest files or directories.
	Paths []string
	// Stdin is read for the path "-" (optional).
	Stdin io.Reader
	// InstanceTypes are what every NodePool's NodeClass offers.
	InstanceTypes []*scheduling.InstanceType
	// DefaultSpread are the scheduler's default topology spread
	// constraints (--scheduler-config) for pods that declare none.
	DefaultSpread scheduling.SpreadDefaults
	// FeatureGates are the controller's --feature-gates; nil serves every
	// gated object among the manifests (NodeOverlays, static NodePools,
	// CapacityBuffers, ProvisioningRequests).
	FeatureGates *options.FeatureGates
}

// Run loads the manifests, solves and reports. Bad input is an error
// (a *manifest.Error names the file, document and field); pods that do
// not fit are not errors but Report.Unschedulable entries.
func Run(ctx context.Context, opts Options) (*Report, error) {
	set, err := manifest.LoadFrom(opts.Stdin, opts.Paths...)
	if err != nil {
		return nil, err
	}
	return simulate(ctx, set, opts)
}

// Simulate runs the dry-run on manifests already read.
func Simulate(ctx context.Context, set *manifest.Set, types []*scheduling.InstanceType) (*Report, error) {
	return simulate(ctx, set, Options{InstanceTypes: types})
}

func simulate(ctx context.Context, set *manifest.Set, opts Options) (*Report, error) {
	if len(opts.InstanceTypes) == 0 {
		return nil, fmt.Errorf("the instance-type catalog is empty")
	}
	g := gates{fg: opts.FeatureGates}
	cluster, err := manifest.Expand(set)
	if err != nil {
		return nil, err
	}
	// 1. Gather: the NodePools with their (overlaid) instance types, the
	// existing nodes, the static NodePools' nodes and the buffers' pods.
	in, static, warnings := buildInput(set, cluster, opts.InstanceTypes, g)
	volumeWarnings, err := applyVolumeLimits(ctx, set, &in)
	if err != nil {
		return nil, err
	}
	warnings = append(warnings, volumeWarnings...)
	statics, staticWarnings := staticNodes(in, static, cluster.Nodes)
	warnings = append(warnings, staticWarnings...)
	for _, sn := range statics {
		in.Nodes = append(in.Nodes, sn.node)
	}
	var bufs []buffers.Buffer
	if len(set.CapacityBuffers) > 0 && !g.on(options.FeatureCapacityBuffer) {
		warnings = append(warnings, offWarning(fmt.Sprintf("%d CapacityBuffer(s)", len(set.CapacityBuffers)), options.FeatureCapacityBuffer))
	} else if len(set.CapacityBuffers) > 0 {
		var bufWarnings []string
		if bufs, bufWarnings, err = resolveBuffers(ctx, set); err != nil {
			return nil, err
		}
		warnings = append(warnings, bufWarnings...)
	}
	virtual, headroom := bufferPods(bufs)
	if len(virtual) > 0 {
		in.Pods = append(slices.Clip(in.Pods), virtual...)
		in.Headroom = headroom
	}
	in.DefaultSpread = defaultSpread(set, in.Pods, opts.DefaultSpread)
	// 2. Decide as the provisioner: solve, then admit against the
	// NodePools' limits, so what simulate shows is what it would create.
	res := solve(ctx, in)
	rep := newReport(res, cluster, statics)
	if len(bufs) > 0 {
		rep.Buffers = bufferSummaries(bufs, res)
		priceBuffers(ctx, in, bufs, res, rep)
	}
	// 3. The ProvisioningRequests, against the cluster once the pending
	// pods are placed.
	if len(set.ProvisioningRequests) > 0 && !g.on(options.FeatureProvisioningRequest) {
		warnings = append(warnings, offWarning(fmt.Sprintf("%d ProvisioningRequest(s)", len(set.ProvisioningRequests)), options.FeatureProvisioningRequest))
	} else if len(set.ProvisioningRequests) > 0 {
		var reqWarnings []string
		rep.ProvisioningRequests, reqWarnings = judgeRequests(ctx, set, in, withPlacements(in.Nodes, res))
		warnings = append(warnings, reqWarnings...)
	}
	rep.Warnings = append(append(append([]string(nil), set.Warnings...), cluster.Warnings...), warnings...)
	return rep, nil
}

// solve is the provisioner's pass: the solve, then the NodeClaims admitted
// against the NodePools' limits.
func solve(ctx context.Context, in simulation.Input) *simulation.Result {
	res := simulation.Solve(ctx, in)
	simulation.AdmitLimits(in, res)
	return res
}

// buildInput turns the manifests into the simulator's input: every dynamic
// NodePool offers the whole catalog (its requirements narrow it), with the
// NodeOverlays applied. The static NodePools served (gate on) are returned
// apart, with their instance types.
func buildInput(set *manifest.Set, cluster *manifest.Cluster, types []*scheduling.InstanceType, g gates) (simulation.Input, []*simulation.NodePool, []string) {
	var warnings []string
	in := simulation.Input{Pods: cluster.Pending, DaemonSets: set.DaemonSets, Namespaces: set.Namespaces}
	for _, lr := range set.LimitRanges {
		in.LimitRanges = append(in.LimitRanges, *lr)
	}
	classes := map[string]bool{}
	for _, nc := range set.NodeClasses {
		classes[nc.Name] = true
	}
	var static []*simulation.NodePool
	for _, np := range set.NodePools {
		switch {
		case np.DeletionTimestamp != nil:
			warnings = append(warnings, fmt.Sprintf("NodePool %s: being deleted; it launches nothing", np.Name))
			continue
		case np.Spec.Replicas != nil && !g.on(options.FeatureStaticCapacity):
			warnings = append(warnings, fmt.Sprintf("NodePool %s: static (replicas %d) but the StaticCapacity feature gate is off: inert, it gets no nodes "+
				"(ReplicasServed False, StaticCapacityDisabled; --feature-gates=StaticCapacity=true serves it)", np.Name, *np.Spec.Replicas))
			continue
		}
		if w := nodeClassWarning(np, classes); w != "" {
			warnings = append(warnings, w)
		}
		pool := &simulation.NodePool{NodePool: np, InstanceTypes: types}
		if np.Spec.Replicas != nil {
			static = append(static, pool)
			continue
		}
		in.NodePools = append(in.NodePools, pool)
	}
	if len(set.NodeOverlays) > 0 && !g.on(options.FeatureNodeOverlay) {
		warnings = append(warnings, offWarning(fmt.Sprintf("%d NodeOverlay(s)", len(set.NodeOverlays)), options.FeatureNodeOverlay))
	} else {
		warnings = append(warnings, applyOverlays(set.NodeOverlays, append(slices.Clip(in.NodePools), static...))...)
	}
	switch {
	case len(in.NodePools) == 0 && len(static) == 0:
		warnings = append(warnings, "no dynamic NodePool among the manifests: karp would launch nothing")
	case len(in.NodePools) == 0:
		warnings = append(warnings, "no dynamic NodePool among the manifests: karp would launch nothing beyond the static NodePools' nodes")
	}
	for _, ns := range cluster.Nodes {
		in.Nodes = append(in.Nodes, existingNode(ns))
	}
	return in, static, warnings
}

// nodeClassWarning notes a NodePool whose NodeClass is not among the
// manifests: it is assumed to exist and offer the catalog.
func nodeClassWarning(np *karpv1.NodePool, classes map[string]bool) string {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return ""
	}
	if ref.Group != kwokv1alpha1.Group || ref.Kind != "KWOKNodeClass" {
		return fmt.Sprintf("NodePool %s: nodeClassRef %s %s/%s is not the kwok provider's; assuming it offers the catalog's instance types", np.Name, ref.Kind, ref.Group, ref.Name)
	}
	if len(classes) > 0 && !classes[ref.Name] {
		return fmt.Sprintf("NodePool %s: KWOKNodeClass %q is not among the manifests; assuming it exists", np.Name, ref.Name)
	}
	return ""
}

// existingNode describes a Node from the manifests to the simulator.
func existingNode(ns *manifest.NodeState) *simulation.Node {
	n := ns.Node
	alloc := n.Status.Allocatable
	if len(alloc) == 0 {
		alloc = n.Status.Capacity
	}
	out := &simulation.Node{Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Capacity: n.Status.Capacity,
		Allocatable: alloc, Pods: ns.Pods, Initialized: true, MarkedForDeletion: n.DeletionTimestamp != nil}
	for _, t := range n.Spec.Taints {
		switch t.Key {
		case karpv1.UnregisteredTaintKey:
			out.Initialized = false
		case karpv1.DisruptedTaintKey:
			out.MarkedForDeletion = true
		}
	}
	return out
}

// podKey is "namespace/name".
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
