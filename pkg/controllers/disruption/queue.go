package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/render"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// queued is a started command waiting for its replacements.
type queued struct {
	cmd Command
	// replacements are the names of the NodeClaims launched for it, index
	// for index with cmd.Replacements.
	replacements []string
	started      time.Time
}

// owns reports the StateNode IDs of the command's candidates.
func (q *queued) ids() []string {
	out := make([]string, 0, len(q.cmd.Candidates))
	for _, c := range q.cmd.Candidates {
		out = append(out, c.StateNode.ID())
	}
	return out
}

// queuedIDs are the candidate IDs of every queued command.
func (c *Controller) queuedIDs() map[string]bool {
	out := map[string]bool{}
	for _, q := range c.queue {
		for _, id := range q.ids() {
			out[id] = true
		}
	}
	return out
}

// start runs a command: taint the candidates karpenter.sh/disrupted and
// set their DisruptionReason, then launch the replacements (nominating the
// candidates' pods to them), mark the candidates for deletion, and either
// delete them at once (no replacements) or queue the command until the
// replacements initialize. The taint comes first, as upstream, so no pod
// lands on a candidate while its replacement launches. Any failure undoes
// what was done, deleting the replacements created so far.
func (c *Controller) start(ctx context.Context, cmd Command) error {
	q := &queued{cmd: cmd, started: c.clock.Now()}
	// The provisioner must not take the taint for a deletion whose pods
	// need capacity before the replacements exist and hold them.
	c.cluster.HoldDisruptionStart(q.ids()...)
	defer c.cluster.ReleaseDisruptionStart(q.ids()...)
	for _, cand := range cmd.Candidates {
		if err := c.setDisrupted(ctx, cand.Name(), true); err != nil {
			return errors.Join(err, c.abort(ctx, q))
		}
		if err := c.setReason(ctx, cand.NodeClaim().Name, cmd.Reason); err != nil {
			return errors.Join(err, c.abort(ctx, q))
		}
	}
	for _, r := range cmd.Replacements {
		obj := render.NodeClaim(r)
		if err := c.kubeClient.Create(ctx, obj); err != nil {
			return errors.Join(fmt.Errorf("creating replacement nodeclaim: %w", err), c.abort(ctx, q))
		}
		c.cluster.UpdateNodeClaim(obj)
		q.replacements = append(q.replacements, obj.Name)
	}
	c.nominate(q)
	c.cluster.MarkForDeletion(q.ids()...)
	decisionsTotal.WithLabelValues(cmd.Decision(), reasonValue(cmd.Reason), cmd.Method.ConsolidationType()).Inc()
	for _, pool := range commandNodePools(cmd) {
		decisionsByNodePool.WithLabelValues(pool, cmd.Decision(), reasonValue(cmd.Reason), cmd.Method.ConsolidationType()).Inc()
	}
	log.FromContext(ctx).Info("disrupting nodes", "command", cmd.String(), "reason", cmd.Reason,
		"savings", fmt.Sprintf("%.4f", cmd.Savings))
	for _, cand := range cmd.Candidates {
		c.events.launching(cand, cmd, q.replacements)
	}
	if len(q.replacements) == 0 {
		return c.finish(ctx, q)
	}
	c.queue = append(c.queue, q)
	return nil
}

// nominate points the candidates' pods at the replacements chosen for them,
// so the provisioner does not launch capacity for them again.
func (c *Controller) nominate(q *queued) {
	for i, name := range q.replacements {
		for _, pod := range q.cmd.Replacements[i].Pods {
			c.cluster.Nominate(pod, state.NodeClaimID(name), c.opts.NominationTTL)
		}
	}
}

// advance moves every queued command on: finished ones delete their
// candidates, failed or timed-out ones roll back.
func (c *Controller) advance(ctx context.Context) error {
	var errs []error
	keep := c.queue[:0]
	for _, q := range c.queue {
		done, err := c.advanceOne(ctx, q)
		if err != nil {
			errs = append(errs, err)
		}
		if !done {
			keep = append(keep, q)
		}
	}
	c.queue = keep
	return errors.Join(errs...)
}

func (c *Controller) advanceOne(ctx context.Context, q *queued) (bool, error) {
	if c.clock.Since(q.started) > c.opts.QueueTimeout {
		return true, c.fail(ctx, q, "replacements did not initialize within "+c.opts.QueueTimeout.String(), true)
	}
	ready := 0
	for _, name := range q.replacements {
		nc := &karpv1.NodeClaim{}
		err := c.kubeClient.Get(ctx, types.NamespacedName{Name: name}, nc)
		if apierrors.IsNotFound(err) {
			// The cache may not hold a NodeClaim created a moment ago:
			// taking that for a deletion would roll the command back and
			// launch a second replacement for the same pods.
			err = c.apiReader.Get(ctx, types.NamespacedName{Name: name}, nc)
		}
		if apierrors.IsNotFound(err) || (err == nil && nc.DeletionTimestamp != nil) {
			return true, c.fail(ctx, q, "replacement nodeclaim "+name+" was deleted", false)
		}
		if err != nil {
			return false, fmt.Errorf("getting replacement nodeclaim: %w", err)
		}
		if nc.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) {
			ready++
		}
	}
	if ready < len(q.replacements) {
		c.nominate(q)
		for _, cand := range q.cmd.Candidates {
			c.events.waiting(cand, q.replacements)
		}
		return false, nil
	}
	return true, c.finish(ctx, q)
}

// finish deletes the candidates' NodeClaims; the termination controllers
// drain and remove them.
func (c *Controller) finish(ctx context.Context, q *queued) error {
	var errs []error
	for _, cand := range q.cmd.Candidates {
		nc := cand.NodeClaim()
		// A deadline may have deleted it meanwhile (expiry, replace-by):
		// that deletion was counted already.
		current := &karpv1.NodeClaim{}
		if err := c.kubeClient.Get(ctx, client.ObjectKeyFromObject(nc), current); apierrors.IsNotFound(err) ||
			(err == nil && (current.UID != nc.UID || current.DeletionTimestamp != nil)) {
			continue
		}
		if err := c.kubeClient.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
			continue
		}
		c.deleted[nc.Name] = c.clock.Now()
		metrics.NodeClaimsDisruptedTotal.WithLabelValues(strings.ToLower(string(q.cmd.Reason)), cand.NodePool.Name,
			cand.CapacityType, string(cand.NodePool.Spec.Disruption.ConsolidationPolicy), metrics.TerminationModeGraceful).Inc()
		c.events.terminating(cand, q.cmd)
	}
	return errors.Join(errs...)
}

// fail rolls the command back and counts the failure. With backOff (the
// replacements never initialized: a broken image, a NodeClass its
// instances cannot join with) the candidates are also left alone for a
// while, so the failure does not turn into a loop of replacements while
// the candidates keep serving. A replacement deleted under the command
// (a failed launch, a user) is retried at once, as a new launch may well
// succeed.
//
// The replacements are kept, as upstream keeps them: one that initializes
// late (a slow device driver) is then an ordinary node the candidates'
// pods can move to, while one that never does stays visible, not
// Initialized, for its owner to investigate. Deleting it would make a
// node pool whose nodes take longer than the timeout to initialize
// impossible to drift, and would hide the cause.
func (c *Controller) fail(ctx context.Context, q *queued, why string, backOff bool) error {
	log.FromContext(ctx).Info("disruption command failed, rolling back", "command", q.cmd.String(), "reason", why)
	queueFailures.WithLabelValues(q.cmd.Decision(), reasonValue(q.cmd.Reason), q.cmd.Method.ConsolidationType()).Inc()
	if !backOff {
		return c.rollback(ctx, q)
	}
	now := c.clock.Now()
	for _, cand := range q.cmd.Candidates {
		name := cand.NodeClaim().Name
		f := c.failed[name]
		f.count++
		f.why = why
		f.until = now.Add(failureBackoff(c.opts.QueueTimeout, f.count))
		c.failed[name] = f
	}
	return c.rollback(ctx, q)
}

// failure is a candidate's record of failed commands.
type failure struct {
	count int
	why   string
	until time.Time
}

// maxFailureBackoff caps how long a candidate is left alone after failed
// commands.
const maxFailureBackoff = 4 * time.Hour

// failureBackoff is how long a candidate is left alone after its count-th
// failed command: twice the queue timeout, doubling with each failure, at
// most maxFailureBackoff.
func failureBackoff(queueTimeout time.Duration, count int) time.Duration {
	d := 2 * queueTimeout
	for i := 1; i < count && d < maxFailureBackoff; i++ {
		d *= 2
	}
	return min(d, maxFailureBackoff)
}

// forgetFailures drops the failure records of NodeClaims that are gone.
func (c *Controller) forgetFailures(w *world) {
	if len(c.failed) == 0 {
		return
	}
	present := make(map[string]bool, len(w.stateNodes))
	for _, sn := range w.stateNodes {
		if sn.NodeClaim != nil {
			present[sn.NodeClaim.Name] = true
		}
	}
	for name := range c.failed {
		if !present[name] {
			delete(c.failed, name)
		}
	}
}

// rollback untaints the candidates, clears their DisruptionReason and
// unmarks them.
func (c *Controller) rollback(ctx context.Context, q *queued) error {
	var errs []error
	for _, cand := range q.cmd.Candidates {
		errs = append(errs, c.setDisrupted(ctx, cand.Name(), false), c.setReason(ctx, cand.NodeClaim().Name, ""))
	}
	c.cluster.UnmarkForDeletion(q.ids()...)
	// The candidates' pods stay where they are: their nominations to the
	// replacements go too. A kept replacement (one that never initialized)
	// is then seen empty, so the next decision that would rest on it is
	// refused as upstream refuses it, instead of a nomination for pods that
	// are not coming making it look full and buying another node.
	for _, name := range q.replacements {
		c.cluster.ReleaseNominations(state.NodeClaimID(name))
	}
	return errors.Join(errs...)
}

// abort rolls back a command that could not be started and deletes the
// replacements created for it.
func (c *Controller) abort(ctx context.Context, q *queued) error {
	errs := []error{c.rollback(ctx, q)}
	for _, name := range q.replacements {
		nc := &karpv1.NodeClaim{}
		nc.Name = name
		if err := c.kubeClient.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting replacement nodeclaim %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// commandNodePools lists the NodePools of the command's candidates, once
// each, in candidate order.
func commandNodePools(cmd Command) []string {
	var pools []string
	for _, c := range cmd.Candidates {
		if !slices.Contains(pools, c.NodePool.Name) {
			pools = append(pools, c.NodePool.Name)
		}
	}
	return pools
}

// clearStale removes the disrupted taint and DisruptionReason from managed
// nodes that no queued command owns and that are not being deleted: what a
// command left behind when the controller restarted or a rollback failed.
func (c *Controller) clearStale(ctx context.Context, w *world) error {
	queued := c.queuedIDs()
	now := c.clock.Now()
	for name, at := range c.deleted {
		if now.Sub(at) > staleGrace {
			delete(c.deleted, name)
		}
	}
	var errs []error
	for _, sn := range w.stateNodes {
		nc := sn.NodeClaim
		if nc == nil || queued[sn.ID()] || nc.DeletionTimestamp != nil || c.deleted[nc.Name] != (time.Time{}) {
			continue
		}
		if sn.Node != nil && sn.Node.DeletionTimestamp != nil {
			continue
		}
		tainted := sn.Node != nil && hasDisruptedTaint(sn.Node.Spec.Taints)
		reason := nc.StatusConditions().Get(karpv1.ConditionTypeDisruptionReason) != nil
		if !tainted && !reason {
			continue
		}
		log.FromContext(ctx).Info("clearing a stale disruption", "NodeClaim", nc.Name)
		if tainted {
			errs = append(errs, c.setDisrupted(ctx, sn.Node.Name, false))
		}
		if reason {
			errs = append(errs, c.setReason(ctx, nc.Name, ""))
		}
		c.cluster.UnmarkForDeletion(sn.ID())
	}
	return errors.Join(errs...)
}

// staleGrace is how long a NodeClaim the controller deleted is left alone
// by clearStale while the informers catch up with the deletion.
const staleGrace = time.Minute
