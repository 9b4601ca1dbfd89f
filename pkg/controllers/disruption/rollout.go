package disruption

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/rollout"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// BlockedRolloutBudget: a pod no PDB selects cannot be evicted now without
// making more of its controller's replicas unavailable than the
// controller's rollout budget (maxUnavailable) allows
// (Options.RespectRolloutBudget).
const BlockedRolloutBudget = "RolloutBudget"

// rolloutIndex reads the rollout budgets of one pass's pods (one
// rollout.View, so each controller is read once) and records in the world
// how many available pods of each controller every candidate holds.
type rolloutIndex struct {
	view *rollout.View
}

// newRolloutIndex returns the pass's index, or nil when rollout budgets
// are not respected.
func (c *Controller) newRolloutIndex() *rolloutIndex {
	if !c.opts.RespectRolloutBudget || c.kubeClient == nil {
		return nil
	}
	return &rolloutIndex{view: rollout.NewView(c.kubeClient, nil)}
}

// check returns why the pod holds its node ("" when it does not), and
// counts the pod against its controller's budget for the node when it is
// available. A pod a PDB selects is the PDB's (pdbIndex).
func (x *rolloutIndex) check(ctx context.Context, w *world, node string, pod *corev1.Pod) string {
	if x == nil {
		return ""
	}
	b, err := x.view.Budget(ctx, pod)
	switch {
	case err != nil:
		return fmt.Sprintf("the rollout budget of pod %s/%s cannot be read: %v", pod.Namespace, pod.Name, err)
	case b == nil:
		return ""
	case !b.Admits(pod):
		return fmt.Sprintf("pod %s/%s cannot be evicted now: %s", pod.Namespace, pod.Name, b)
	case b.Available.Has(pod.UID):
		w.takeFromRollout(node, b)
	}
	return ""
}

// takeFromRollout counts one available pod of b's controller on the node.
func (w *world) takeFromRollout(node string, b *scheduling.RolloutBudget) {
	if w.rollouts == nil {
		w.rollouts, w.rolloutTakes = map[types.UID]*scheduling.RolloutBudget{}, map[string]map[types.UID]int{}
	}
	w.rollouts[b.UID] = b
	if w.rolloutTakes[node] == nil {
		w.rolloutTakes[node] = map[types.UID]int{}
	}
	w.rolloutTakes[node][b.UID]++
}

// withinRolloutBudgets keeps, in order, the candidates one multi-node
// command may take together: for every controller, the available pods the
// kept candidates hold stay within what its rollout budget allows now
// (maxUnavailable minus unavailable), so their drains can evict them all
// at once. A candidate that would go over is left out (it may still go
// alone, by single-node consolidation, its drain then evicting its pods in
// turn); the second result names, by candidate, the controller that left
// it out.
func (w *world) withinRolloutBudgets(cands []*Candidate) ([]*Candidate, map[string]string) {
	if len(w.rolloutTakes) == 0 {
		return cands, nil
	}
	taken := map[types.UID]int{}
	var out []*Candidate
	over := map[string]string{}
	for _, cand := range cands {
		takes := w.rolloutTakes[cand.Name()]
		if uid, ok := overRollout(w.rollouts, taken, takes); !ok {
			over[cand.Name()] = w.rollouts[uid].String()
			continue
		}
		for uid, n := range takes {
			taken[uid] += n
		}
		out = append(out, cand)
	}
	return out, over
}

// overRollout checks adding takes to taken against the budgets; it
// returns the first controller (by UID) that would go over.
func overRollout(budgets map[types.UID]*scheduling.RolloutBudget, taken, takes map[types.UID]int) (types.UID, bool) {
	uids := make([]types.UID, 0, len(takes))
	for uid := range takes {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	for _, uid := range uids {
		if taken[uid]+takes[uid] > budgets[uid].Allowed() {
			return uid, false
		}
	}
	return "", true
}

// rolloutKey fingerprints the rollout budgets the pass counted, for the
// consolidation memo: a budget with more room can allow a larger
// multi-node command on unchanged candidates.
func (w *world) rolloutKey() string {
	keys := make([]string, 0, len(w.rollouts))
	for uid, b := range w.rollouts {
		keys = append(keys, fmt.Sprintf("%s=%d", uid, b.Allowed()))
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}
