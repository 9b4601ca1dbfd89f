package simulate

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/manifest"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
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
}

// Run loads the manifests, solves and reports. Bad input is an error
// (a *manifest.Error names the file, document and field); pods that do
// not fit are not errors but Report.Unschedulable entries.
func Run(ctx context.Context, opts Options) (*Report, error) {
	set, err := manifest.LoadFrom(opts.Stdin, opts.Paths...)
	if err != nil {
		return nil, err
	}
	return simulate(ctx, set, opts.InstanceTypes, opts.DefaultSpread)
}

// Simulate runs the dry-run on manifests already read.
func Simulate(ctx context.Context, set *manifest.Set, types []*scheduling.InstanceType) (*Report, error) {
	return simulate(ctx, set, types, nil)
}

func simulate(ctx context.Context, set *manifest.Set, types []*scheduling.InstanceType, defaults scheduling.SpreadDefaults) (*Report, error) {
	if len(types) == 0 {
		return nil, fmt.Errorf("the instance-type catalog is empty")
	}
	cluster, err := manifest.Expand(set)
	if err != nil {
		return nil, err
	}
	in, warnings := buildInput(set, cluster, types)
	volumeWarnings, err := applyVolumeLimits(ctx, set, &in)
	if err != nil {
		return nil, err
	}
	warnings = append(warnings, volumeWarnings...)
	in.DefaultSpread = defaultSpread(set, in.Pods, defaults)
	res := simulation.Solve(ctx, in)
	// The provisioner admits what it solved against the NodePools' limits
	// the same way: what simulate shows is what it would create.
	simulation.AdmitLimits(in, res)
	rep := newReport(res, cluster)
	rep.Warnings = append(append(append([]string(nil), set.Warnings...), cluster.Warnings...), warnings...)
	return rep, nil
}

// buildInput turns the manifests into the simulator's input: every dynamic
// NodePool offers the whole catalog (its requirements narrow it).
func buildInput(set *manifest.Set, cluster *manifest.Cluster, types []*scheduling.InstanceType) (simulation.Input, []string) {
	var warnings []string
	in := simulation.Input{Pods: cluster.Pending, DaemonSets: set.DaemonSets, Namespaces: set.Namespaces}
	for _, lr := range set.LimitRanges {
		in.LimitRanges = append(in.LimitRanges, *lr)
	}
	classes := map[string]bool{}
	for _, nc := range set.NodeClasses {
		classes[nc.Name] = true
	}
	for _, np := range set.NodePools {
		if !simulation.LaunchesNodes(np) {
			if np.Spec.Replicas != nil {
				warnings = append(warnings, fmt.Sprintf("NodePool %s: static (replicas %d); it keeps its own node count and takes no pending pods", np.Name, *np.Spec.Replicas))
			} else {
				warnings = append(warnings, fmt.Sprintf("NodePool %s: being deleted; it launches nothing", np.Name))
			}
			continue
		}
		if w := nodeClassWarning(np, classes); w != "" {
			warnings = append(warnings, w)
		}
		in.NodePools = append(in.NodePools, &simulation.NodePool{NodePool: np, InstanceTypes: types})
	}
	warnings = append(warnings, applyOverlays(set.NodeOverlays, in.NodePools)...)
	if len(in.NodePools) == 0 {
		warnings = append(warnings, "no dynamic NodePool among the manifests: karp would launch nothing")
	}
	for _, ns := range cluster.Nodes {
		in.Nodes = append(in.Nodes, existingNode(ns))
	}
	return in, warnings
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
