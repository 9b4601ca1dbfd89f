package disruption

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/singleton"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// Controller is the singleton disruption loop.
type Controller struct {
	kubeClient client.Client
	// apiReader reads straight from the API server: a replacement the
	// cache does not hold yet may just have been created, so its absence
	// is confirmed there before the command is rolled back.
	apiReader     client.Reader
	cloudProvider cloudprovider.CloudProvider
	cluster       *state.Cluster
	clock         clock.Clock
	events        *recorder
	opts          Options
	methods       []Method
	simulator     *passSimulator
	// overlaysPending is true after a pass that waited on the NodeOverlay
	// evaluation, so the next one comes soon.
	overlaysPending bool

	// queue holds started commands waiting for their replacements.
	queue []*queued
	// pending is a consolidation decision waiting for validation.
	pending *pending
	// deleted remembers NodeClaims this controller just deleted.
	deleted map[string]time.Time
	// failed remembers, by NodeClaim name, candidates of commands that
	// failed, so they are not tried again before their backoff ends.
	failed map[string]failure
	// memo is the consolidation input of the last pass that found nothing,
	// and when; an unchanged input is not searched again for memoTTL.
	memo   string
	memoAt time.Time
}

// memoTTL forces a fresh consolidation search at least this often.
const memoTTL = 5 * time.Minute

// NewController builds the disruption controller.
func NewController(kubeClient client.Client, cloudProvider cloudprovider.CloudProvider, cluster *state.Cluster,
	recorder EventRecorder, clk clock.Clock, opts Options, solverOpts simulation.Options) *Controller {
	c := &Controller{kubeClient: kubeClient, apiReader: kubeClient, cloudProvider: cloudProvider, cluster: cluster, clock: clk,
		events: newRecorder(recorder), opts: opts, deleted: map[string]time.Time{},
		failed:    map[string]failure{},
		simulator: &passSimulator{kubeClient: kubeClient, opts: solverOpts, defaultSpread: opts.DefaultSpread}}
	c.methods = NewMethods(opts, kubeClient, cluster, c.events)
	return c
}

// WithAPIReader sets the uncached reader that confirms a replacement is
// really gone (default: the controller's client).
func (c *Controller) WithAPIReader(r client.Reader) *Controller {
	if r != nil {
		c.apiReader = r
	}
	return c
}

// Name is the controller's name.
func (c *Controller) Name() string { return "disruption" }

// Register runs the loop as a singleton.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	if err := RegisterMetrics(crmetrics.Registry); err != nil {
		return fmt.Errorf("registering disruption metrics: %w", err)
	}
	err := builder.ControllerManagedBy(mgr).Named(c.Name()).WatchesRawSource(singleton.Source("")).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(conflict.Requeue(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			return c.Reconcile(ctx)
		})))
	if err != nil {
		return fmt.Errorf("registering disruption controller: %w", err)
	}
	return nil
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups="",resources=limitranges;namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile runs one pass (see the package doc) and says when to run the
// next: at once after an action, soon while commands are queued or a
// decision awaits validation, else after PollPeriod.
func (c *Controller) Reconcile(ctx context.Context) (reconcile.Result, error) {
	synced, err := c.cluster.Synced(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !synced {
		log.FromContext(ctx).V(1).Info("waiting on cluster sync")
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	acted, err := c.Pass(ctx)
	switch {
	case err != nil:
		return reconcile.Result{}, err
	case acted:
		return reconcile.Result{RequeueAfter: time.Millisecond}, nil
	case c.overlaysPending:
		return reconcile.Result{RequeueAfter: time.Second}, nil
	case c.pending != nil:
		return reconcile.Result{RequeueAfter: max(time.Millisecond, c.pending.at.Sub(c.clock.Now()))}, nil
	case len(c.queue) > 0:
		return reconcile.Result{RequeueAfter: min(time.Second, c.opts.PollPeriod)}, nil
	}
	return reconcile.Result{RequeueAfter: c.opts.PollPeriod}, nil
}

// Pass runs one disruption pass over a synced state and reports whether
// it started a command.
func (c *Controller) Pass(ctx context.Context) (bool, error) {
	// 1. Advance the queue, then build the world without its nodes.
	errQueue := c.advance(ctx)
	w := c.buildWorld(ctx, c.queuedIDs())
	c.overlaysPending = w.unevaluated != nil
	if c.overlaysPending {
		// Prices or capacity changed and are not evaluated yet: decide
		// nothing on stale ones; queued commands still advance.
		log.FromContext(ctx).V(1).Info("waiting on the nodeoverlay evaluation", "reason", w.unevaluated.Error())
		return false, errQueue
	}
	c.forgetFailures(w)
	// 2. Clear what a lost command left behind.
	if err := c.clearStale(ctx, w); err != nil {
		errQueue = errors.Join(errQueue, err)
	}
	if err := c.simulator.refresh(ctx, c, w); err != nil {
		return false, errors.Join(errQueue, err)
	}
	// 3. Decide (or validate a decision), then act.
	acted, err := c.decide(ctx, w)
	// 4. Say why the other nodes stay.
	return acted, errors.Join(errQueue, err, c.explain(ctx, w))
}

// decide validates a pending decision whose delay passed, or runs the
// methods; commands that need no validation start at once.
func (c *Controller) decide(ctx context.Context, w *world) (bool, error) {
	if p := c.pending; p != nil {
		if c.clock.Now().Before(p.at) {
			return false, nil
		}
		c.pending = nil
		cmd, why := c.validate(ctx, w, p)
		if cmd.Empty() {
			failedValidations.WithLabelValues(p.cmd.Method.ConsolidationType()).Inc()
			log.FromContext(ctx).Info("abandoning disruption after validation", "command", p.cmd.String(), "reason", why)
			for _, cand := range p.cmd.Candidates {
				c.events.rejected(cand, why)
			}
			return false, nil
		}
		return true, c.start(ctx, cmd)
	}
	cmd, err := c.compute(ctx, w)
	for _, a := range w.approvals {
		c.events.approved(a.cmd, a.nodePool, a.score)
	}
	if err != nil || cmd.Empty() {
		return false, err
	}
	if cmd.Method.NeedsValidation() {
		for _, cand := range cmd.Candidates {
			c.events.candidate(cand, cmd)
		}
	}
	if cmd.Method.NeedsValidation() && c.opts.ValidationDelay > 0 {
		c.pending = &pending{cmd: cmd, at: c.clock.Now().Add(c.opts.ValidationDelay)}
		log.FromContext(ctx).V(1).Info("validating disruption", "command", cmd.String(), "delay", c.opts.ValidationDelay)
		return false, nil
	}
	return true, c.start(ctx, cmd)
}

// compute tries the methods in order and returns the first command.
func (c *Controller) compute(ctx context.Context, w *world) (Command, error) {
	for _, m := range c.methods {
		cands := w.filter(ctx, m)
		eligibleNodes.WithLabelValues(reasonValue(m.Reason())).Set(float64(len(cands)))
		if len(cands) == 0 {
			continue
		}
		var budgets Budgets
		if nb, ok := m.(interface{ IgnoresBudgets() bool }); !ok || !nb.IgnoresBudgets() {
			budgets = c.budgets(ctx, w, m.Reason())
		}
		// A consolidation search whose input has not changed since it last
		// found nothing is not run again (until memoTTL).
		key := ""
		if m.Reason() == karpv1.DisruptionReasonUnderutilized {
			key = memoKey(w, cands, budgets) + c.simulator.headroomKey()
			if key == c.memo && c.clock.Since(c.memoAt) < memoTTL {
				continue
			}
		}
		start := c.clock.Now()
		cmd, err := m.ComputeCommand(ctx, w, c.simulator, budgets, cands...)
		evaluationDuration.WithLabelValues(reasonValue(m.Reason()), m.ConsolidationType()).Observe(c.clock.Since(start).Seconds())
		if err != nil {
			return Command{}, err
		}
		if !cmd.Empty() {
			return cmd, nil
		}
		if single, ok := m.(*SingleNodeConsolidation); ok && single.complete {
			c.memo, c.memoAt = key, c.clock.Now()
		}
	}
	return Command{}, nil
}

// filter returns the candidates the method considers, in order, and
// records the blockers of those it turns down.
func (w *world) filter(ctx context.Context, m Method) []*Candidate {
	var out []*Candidate
	for _, cand := range w.candidates {
		if !mayTake(m, cand) {
			continue // its pod blocker is recorded
		}
		ok, why := m.ShouldDisrupt(ctx, w, cand)
		if !ok {
			w.record(cand.Name(), why)
			continue
		}
		out = append(out, cand)
	}
	return out
}

// budgets are the pass's budgets for reason (budgetsFor), published as
// metrics; a NodePool whose budgets cannot be evaluated is logged.
func (c *Controller) budgets(ctx context.Context, w *world, reason karpv1.DisruptionReason) Budgets {
	budgets, err := budgetsFor(w, reason)
	if err != nil {
		log.FromContext(ctx).Error(err, "evaluating disruption budgets")
	}
	_, busy := budgetCounts(w)
	for name, n := range budgets {
		allowedDisruptions.WithLabelValues(name, reasonValue(reason)).Set(float64(n))
		nodesConsumingBudgets.WithLabelValues(name, reasonValue(reason)).Set(float64(busy[name]))
	}
	return budgets
}

// memoKey fingerprints what a consolidation search depends on: every
// node's state and pods, the candidates and the budgets. A pod counts by
// its UID and resourceVersion, so a pod replaced by another (a rolling
// update to smaller requests) or resized in place changes the key though
// the node holds as many pods as before.
func memoKey(w *world, cands []*Candidate, budgets Budgets) string {
	var b strings.Builder
	pods := fnv.New128a()
	for _, sn := range w.stateNodes {
		fmt.Fprintf(&b, "%s:%t:%t;", sn.ID(), sn.MarkedForDeletion, sn.Initialized())
		for _, list := range [][]*corev1.Pod{sn.Pods, sn.Nominated} {
			for _, p := range list {
				_, _ = io.WriteString(pods, string(p.UID)+"/"+p.ResourceVersion+",")
			}
			_, _ = pods.Write([]byte{0})
		}
	}
	fmt.Fprintf(&b, "%x", pods.Sum(nil))
	b.WriteString("|")
	for _, cand := range cands {
		b.WriteString(cand.Name() + ",")
	}
	b.WriteString("|")
	pools := make([]string, 0, len(budgets))
	for k, v := range budgets {
		pools = append(pools, k+"="+strconv.Itoa(v))
	}
	sort.Strings(pools)
	b.WriteString(strings.Join(pools, ","))
	for _, name := range w.poolNames {
		b.WriteString(w.nodePools[name].ResourceVersion)
	}
	b.WriteString("|" + w.rolloutKey())
	return b.String()
}
