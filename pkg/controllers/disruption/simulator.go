package disruption

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/solverinput"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// passSimulator answers what-ifs over the input gathered at the start of a
// pass (refresh); probes of one pass share it.
type passSimulator struct {
	kubeClient client.Client
	in         simulation.Input
	// pass runs the what-ifs over in (the waiting pods placed once).
	pass          *simulation.Pass
	opts          simulation.Options
	defaultSpread scheduling.SpreadDefaults
	// buffers are the CapacityBuffers whose room is kept (nil: none).
	buffers *buffers.Store
	// bookings are the booked ProvisioningRequests whose room is kept
	// (nil: none).
	bookings *buffers.Bookings
}

var _ Simulator = (*passSimulator)(nil)

// refresh gathers the solver input: every node of the cluster state, the
// pending pods (a consolidation must leave them, and the pods of nodes
// being deleted, the room they need), the launchable NodePools with their
// instance types, DaemonSets, LimitRanges and namespaces, and the volume
// topology of the candidates' pods (so a pod with a zonal volume only
// moves within its zone).
func (s *passSimulator) refresh(ctx context.Context, c *Controller, w *world) error {
	nodes, stateNodes := c.cluster.Snapshot()
	for i, sn := range stateNodes {
		nodes[i].Settling = settling(sn, w)
	}
	// The pass's what-ifs all solve over these nodes: each pod's requests
	// are derived once (simulation.NodeCache).
	in := simulation.Input{Nodes: nodes, Pods: c.cluster.ProvisionablePods(), DaemonSets: c.cluster.DaemonSets(), Options: s.opts,
		NodeCache: simulation.NewNodeCache()}
	// The CapacityBuffers' and booked requests' virtual pods wait with
	// the pending pods.
	in.Pods, in.Headroom = s.withBufferPods(in.Pods, in.Nodes)
	for _, name := range w.poolNames {
		np, its := w.nodePools[name], w.typeList[name]
		if its == nil || !solverinput.Launchable(np) {
			continue
		}
		in.NodePools = append(in.NodePools, &simulation.NodePool{NodePool: np, InstanceTypes: its})
	}
	// Every what-if of the pass solves over these NodePools: the label
	// keys their instance types define are collected once, not per solve.
	if in.Options.WellKnownLabels == nil {
		in.Options.WellKnownLabels = simulation.WellKnownLabelsOf(in.NodePools)
	}
	if err := solverinput.Cluster(ctx, s.kubeClient, &in); err != nil {
		return err
	}
	// A pod moves only onto a node whose CSI volume limits leave room for
	// its claims, pending pods' claims counted (see pkg/solverinput).
	if err := solverinput.FillVolumeLimits(ctx, s.kubeClient, &in); err != nil {
		return err
	}
	volumes, err := s.volumeTopology(ctx, w)
	if err != nil {
		return err
	}
	in.VolumeRequirements = volumes
	in.DefaultSpread = solverinput.DefaultSpread(ctx, s.kubeClient, s.defaultSpread, movablePods(in))
	s.in = in
	s.pass = simulation.NewPass(in)
	return nil
}

// settling reports whether the node is inside its NodePool's
// consolidateAfter window: consolidation then moves none of its
// candidates' pods onto it (upstream's rule), so a node that just took
// pods is not filled again before it settles. Nodes of NodePools with
// consolidation disabled (consolidateAfter: Never) are never settling.
func settling(sn *state.StateNode, w *world) bool {
	np := w.nodePools[sn.NodePool()]
	if np == nil || !sn.Managed() || !sn.Initialized() || sn.MarkedForDeletion ||
		np.Spec.Disruption.ConsolidateAfter.Duration == nil {
		return false
	}
	ok, _ := consolidatable(&Candidate{StateNode: sn, NodePool: np}, w.now)
	return !ok
}

// Simulate runs the consolidation what-if for the candidates.
func (s *passSimulator) Simulate(ctx context.Context, opts simulation.ConsolidationOptions, candidates ...*Candidate) (*simulation.Consolidation, error) {
	cs := make([]simulation.ConsolidationCandidate, 0, len(candidates))
	for _, c := range candidates {
		cs = append(cs, simulation.ConsolidationCandidate{Name: c.Name(), Price: c.Price, CapacityType: c.CapacityType})
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.pass.Consolidate(ctx, cs, opts), nil
}
