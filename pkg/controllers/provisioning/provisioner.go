package provisioning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning/hint"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/singleton"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// Options tune the provisioner; the operator fills them from its flags.
type Options struct {
	// BatchIdleDuration closes a batch window after this long without a
	// new trigger (upstream default 1s).
	BatchIdleDuration time.Duration
	// BatchMaxDuration closes a batch window after this long in total
	// (upstream default 10s).
	BatchMaxDuration time.Duration
	// BatchHoldDuration bounds how long an initialized node of a
	// multi-node batch is held from the scheduler while the batch's other
	// nodes start (see package batchhold); 0 turns the hold off.
	BatchHoldDuration time.Duration
	// PreferencePolicy and MinValuesPolicy are passed to the solver.
	PreferencePolicy simulation.PreferencePolicy
	MinValuesPolicy  simulation.MinValuesPolicy
	// SolveTimeout bounds one solve (upstream: 1 minute); the pass then
	// acts on the pods placed so far and the next pass, started at once,
	// places the rest. Zero or less: unbounded. A wall-clock bound, like
	// upstream's: it guards against pathological inputs, not a schedule.
	SolveTimeout time.Duration
	// DefaultSpread are the scheduler's default topology spread
	// constraints (--scheduler-config), applied in the solve to pods that
	// declare none.
	DefaultSpread scheduling.SpreadDefaults
	// ClusterLimits cap every NodePool's nodes together (--cluster-limits):
	// a NodeClaim that would take them over is not created, and its pods
	// are told so (ClusterLimit).
	ClusterLimits corev1.ResourceList
}

// DefaultSolveTimeout is upstream's bound on one provisioning solve.
const DefaultSolveTimeout = time.Minute

// DefaultBatchHoldDuration is karp's default bound on the batch hold.
const DefaultBatchHoldDuration = 10 * time.Second

// DefaultOptions are upstream's defaults (the batch hold is karp's own).
func DefaultOptions() Options {
	return Options{BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second, BatchHoldDuration: DefaultBatchHoldDuration,
		PreferencePolicy: simulation.PreferencePolicyRespect, MinValuesPolicy: simulation.MinValuesPolicyStrict,
		SolveTimeout: DefaultSolveTimeout}
}

// NominationTTL is how long a nomination keeps a pod out of the next
// batches: twice the longest batch window, at least 10s, as upstream.
func (o Options) NominationTTL() time.Duration {
	return max(2*o.BatchMaxDuration, 10*time.Second)
}

// Provisioner is the singleton loop that waits for a batch window, solves
// and creates NodeClaims for the pods the cluster cannot hold.
type Provisioner struct {
	kubeClient    client.Client
	cloudProvider cloudprovider.CloudProvider
	cluster       *state.Cluster
	recorder      *Recorder
	clock         clock.Clock
	opts          Options
	batcher       *Batcher
	// hints writes the hints of pods placed on existing nodes in the
	// background (one writer at a time, stopped with the controller).
	hints *hint.Writer

	// retry is set when a closed window could not be acted on (state not
	// synced); the next pass runs without waiting for a new trigger.
	retry bool
	// skipped names the NodePools this pass left out of the solve and why
	// (set by gather, read by act, for the pods' FailedScheduling events).
	skipped map[string]string
	// buffers are the CapacityBuffers to keep room for (nil: none; see
	// buffers.go).
	buffers *buffers.Store
	// bookings are the booked ProvisioningRequests to keep room for (nil:
	// none; see buffers.go).
	bookings *buffers.Bookings
}

// NewProvisioner builds the provisioner. The Batcher is shared with the
// trigger controllers (NewPodController, NewNodeController).
func NewProvisioner(kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, cluster *state.Cluster,
	recorder EventRecorder, clk clock.Clock, opts Options) *Provisioner {
	return &Provisioner{kubeClient: kubeClient, cloudProvider: cloudProvider, cluster: cluster,
		recorder: NewRecorder(recorder, clk), clock: clk, opts: opts,
		batcher: NewBatcher(clk, opts.BatchIdleDuration, opts.BatchMaxDuration), hints: hint.NewWriter(kubeClient)}
}

// Batcher is the batcher the triggers feed.
func (p *Provisioner) Batcher() *Batcher { return p.batcher }

// Name is the controller's name.
func (p *Provisioner) Name() string { return "provisioner" }

// Register runs the provisioner as a singleton: one request is queued at
// start and every pass requeues it.
func (p *Provisioner) Register(_ context.Context, mgr manager.Manager) error {
	err := builder.ControllerManagedBy(mgr).
		Named(p.Name()).
		WatchesRawSource(singleton.Source("")).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(conflict.Requeue(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			return p.Reconcile(ctx)
		})))
	if err != nil {
		return fmt.Errorf("registering provisioner: %w", err)
	}
	return nil
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=create
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes;limitranges;namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile waits for a batch window to close, then provisions. Waiting on
// the batcher is the loop's pacing (it blocks on triggers, never sleeps
// blindly), so the pass requeues itself immediately.
func (p *Provisioner) Reconcile(ctx context.Context) (reconcile.Result, error) {
	if !p.retry && !p.batcher.Wait(ctx) {
		return reconcile.Result{RequeueAfter: time.Nanosecond}, nil
	}
	synced, err := p.cluster.Synced(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !synced {
		p.retry = true
		log.FromContext(ctx).V(1).Info("waiting on cluster sync")
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	p.retry = false
	if _, err := p.Schedule(ctx); err != nil {
		if errors.Is(err, ErrNodeOverlaysUnevaluated) {
			p.retry = true
			log.FromContext(ctx).V(1).Info("waiting on the nodeoverlay evaluation", "reason", err.Error())
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: time.Nanosecond}, nil
}

// Results is what one provisioning pass did.
type Results struct {
	// Solve is the solver's decision.
	Solve *simulation.Result
	// Created are the NodeClaims created, in order.
	Created []string
	// Deferred counts the pods the solve had no time to place (its time
	// bound ran out); the next pass places them.
	Deferred int
}

// Schedule runs one provisioning pass over the current state (which the
// caller checked is synced): gather, solve, act.
func (p *Provisioner) Schedule(ctx context.Context) (*Results, error) {
	// 1.-3. Gather and solve.
	plan, err := p.Plan(ctx)
	if err != nil {
		return nil, err
	}
	if plan == nil {
		return &Results{}, nil
	}
	in, res, ignored, nodes, stateNodes := plan.Input, plan.Result, plan.Ignored, plan.nodes, plan.stateNodes
	for _, pe := range ignored {
		p.recorder.FailedScheduling(pe.Pod, pe.Status.Message())
	}
	p.cluster.MarkSchedulingDecisions(realPods(decided(res, ignored))...)
	// 4. Act: create NodeClaims, nominate, explain the rest.
	ids := make(map[*simulation.Node]string, len(nodes))
	nodeNames := make(map[*simulation.Node]string, len(nodes))
	for i, n := range nodes {
		ids[n] = stateNodes[i].ID()
		if stateNodes[i].Node != nil {
			nodeNames[n] = stateNodes[i].Node.Name
		}
	}
	created, err := p.act(ctx, in, res, ids)
	p.recordBuffers(res)
	// Pods placed on nodes that exist: tell the scheduler now. Pods of new
	// NodeClaims are hinted when those register (the hint package's Controller).
	for _, ep := range res.ExistingNodes {
		pods := slices.DeleteFunc(realPods(ep.Pods), state.IsAwaitingScheduler)
		if name := nodeNames[ep.Node]; name != "" && len(pods) > 0 {
			// The reconcile context lives as long as the controller
			// (no per-reconcile timeout is set), so the writer stops with it.
			p.hints.Write(ctx, pods, name)
		}
	}
	return &Results{Solve: res, Created: created, Deferred: plan.Deferred}, err
}

// Plan is what a provisioning pass decides before it acts.
type Plan struct {
	// Input is what the solver was given; Result what it decided.
	Input  *simulation.Input
	Result *simulation.Result
	// Ignored are the pods left out of the solve and why (invalid node
	// constraints, unresolvable volumes).
	Ignored []simulation.PodError
	// Skipped names the NodePools the pass left out and why (not Ready,
	// no compatible instance types, instance types unreadable).
	Skipped map[string]string
	// Deferred counts the pods the solve had no time to place.
	Deferred int
	// nodes are the solver's nodes and stateNodes the state they come
	// from, index for index.
	nodes      []*simulation.Node
	stateNodes []*state.StateNode
}

// NodeOf returns the state node behind one of the plan's solver nodes.
func (p *Plan) NodeOf(n *simulation.Node) *state.StateNode {
	for i, sn := range p.nodes {
		if sn == n {
			return p.stateNodes[i]
		}
	}
	return nil
}

// Plan gathers and solves as a pass does, without acting: nothing is
// created, nominated or published. It returns nil when no pod needs a
// place. `karp explain` runs it on a read-only view of a cluster.
func (p *Provisioner) Plan(ctx context.Context) (*Plan, error) {
	// 1. Pending pods; the pods of nodes being deleted come with the
	// snapshot. Nominations to nodes that filled up with other pods are
	// released first, so their pods are placed again now.
	if released := p.cluster.ReleaseOvercommittedNominations(); released > 0 {
		log.FromContext(ctx).V(1).Info("released nominations to full nodes", "count", released)
	}
	pods := p.cluster.ProvisionablePods()
	nodes, stateNodes := p.cluster.ProvisioningSnapshot()
	// The CapacityBuffers' virtual pods come after the real ones; the
	// booked ProvisioningRequests' take the room they fit first (below).
	virtual := append(p.bufferPods(), p.bookedPods(pods, nodes)...)
	id := newSchedulingID()
	if len(pods) == 0 && len(virtual) == 0 && !anyReschedulable(nodes) {
		setQueueDepth(id, 0)
		setPendingByZone(nil)
		return nil, nil
	}
	setQueueDepth(id, len(pods))
	// 2. Gather everything else the solver needs.
	in, ignored, err := p.gather(ctx, append(pods, virtual...), nodes, stateNodes)
	if err != nil {
		return nil, err
	}
	in.Pods = reserveBooked(ctx, in)
	in.Headroom = headroom(in.Pods)
	if n := len(in.Pods) - len(in.Headroom); n > 0 {
		log.FromContext(ctx).Info("found provisionable pod(s)", "count", n)
	}
	// 3. Solve.
	start := p.clock.Now()
	stopTracking := p.trackUnfinishedWork(id, start)
	res, deferred := p.solve(ctx, in)
	stopTracking()
	schedulingDuration.Observe(p.clock.Since(start).Seconds())
	setPendingByZone(res.PendingByZone)
	// What the solve left: the pods it had no time for.
	setQueueDepth(id, deferred)
	return &Plan{Input: in, Result: res, Ignored: ignored, Skipped: p.skipped, Deferred: deferred,
		nodes: nodes, stateNodes: stateNodes}, nil
}

// solve runs the solver within SolveTimeout. When the bound runs out, the
// pods it had no time for are taken out of the result's errors (they are
// not unschedulable) and counted, and the next pass starts without waiting
// for a new batch, so they are placed then.
func (p *Provisioner) solve(ctx context.Context, in *simulation.Input) (*simulation.Result, int) {
	solveCtx := ctx
	if p.opts.SolveTimeout > 0 {
		var cancel context.CancelFunc
		solveCtx, cancel = context.WithTimeout(ctx, p.opts.SolveTimeout)
		defer cancel()
	}
	res := simulation.Solve(solveCtx, *in)
	if solveCtx.Err() == nil || ctx.Err() != nil {
		return res, 0
	}
	kept := res.PodErrors[:0]
	deferred := 0
	for _, pe := range res.PodErrors {
		if simulation.Cancelled(pe.Status) {
			deferred++
			continue
		}
		kept = append(kept, pe)
	}
	res.PodErrors = kept
	if deferred > 0 {
		p.retry = true
		log.FromContext(ctx).Info("provisioning solve reached its time bound, acting on the pods placed so far",
			"timeout", p.opts.SolveTimeout, "deferred", deferred)
	}
	return res, deferred
}

// decided lists the pods a pass decided about: placed on a node that
// exists or is launching, placed on a new NodeClaim, found unschedulable,
// or left out as invalid. Pods the solve had no time for are not among
// them.
func decided(res *simulation.Result, ignored []simulation.PodError) []*corev1.Pod {
	var pods []*corev1.Pod
	for _, ep := range res.ExistingNodes {
		pods = append(pods, ep.Pods...)
	}
	for _, nc := range res.NodeClaims {
		pods = append(pods, nc.Pods...)
	}
	for _, pe := range slices.Concat(res.PodErrors, ignored) {
		pods = append(pods, pe.Pod)
	}
	return pods
}

func anyReschedulable(nodes []*simulation.Node) bool {
	for _, n := range nodes {
		if !n.MarkedForDeletion {
			continue
		}
		for _, pod := range n.Pods {
			if state.IsReschedulable(pod) {
				return true
			}
		}
	}
	return false
}
