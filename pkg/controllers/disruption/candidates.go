package disruption

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// Reasons a node is not disrupted, used as the DisruptionBlocked
// condition's reason.
const (
	BlockedDoNotDisrupt = "DoNotDisrupt"
	BlockedPDB          = "PodDisruptionBudget"
	BlockedNominated    = "Nominated"
	// BlockedBatchHold: the node is new and still closed to the scheduler
	// by its batch hold, so the pods it was launched for cannot be on it
	// yet.
	BlockedBatchHold        = "BatchHold"
	BlockedNodePool         = "NodePoolNotFound"
	BlockedBudget           = "Budget"
	BlockedConsolidateAfter = "ConsolidateAfter"
	BlockedNoCheaper        = "NoCheaperPlacement"
	// BlockedSpotToSpot: the only cheaper placement replaces spot capacity
	// with spot capacity, which the SpotToSpotConsolidation gate or its
	// flexibility rule (15 cheaper instance types) does not allow.
	BlockedSpotToSpot   = "SpotToSpotConsolidation"
	BlockedPolicy       = "ConsolidationPolicy"
	BlockedDisabled     = "ConsolidationDisabled"
	BlockedUnknownPrice = "UnknownPrice"
	// BlockedVolumeTopology: a pod's claim, volume or StorageClass is
	// gone, so where the pod may run is unknown and the node is kept.
	BlockedVolumeTopology = "VolumeTopology"
	// BlockedFailedDisruption: a command disrupting the node failed (its
	// replacements did not initialize, or were deleted) and the node is
	// left alone until the backoff ends.
	BlockedFailedDisruption = "FailedDisruption"
	// BlockedRunningJob: a Running pod of a Job is on the node (karp keeps
	// running Jobs from voluntary disruption; Options.ProtectRunningJobs).
	BlockedRunningJob = "RunningJob"
)

// blocker is why a node is not being disrupted.
type blocker struct{ reason, message string }

// world is what one pass sees: the candidates, why the other managed nodes
// are not candidates, and the NodePools with their instance types.
type world struct {
	// unevaluated is set when a NodePool's instance types wait on the
	// NodeOverlay evaluation: the pass decides nothing then.
	unevaluated error
	now         time.Time
	stateNodes  []*state.StateNode
	// awaited are the pending pods each Node name is the
	// status.nominatedNodeName of (state.Cluster.AwaitedPods).
	awaited   map[string][]*corev1.Pod
	nodePools map[string]*karpv1.NodePool
	types     map[string]map[string]*scheduling.InstanceType
	// typeList keeps each NodePool's instance types in provider order.
	typeList map[string][]*scheduling.InstanceType
	// poolNames are the NodePools by name, sorted.
	poolNames  []string
	candidates []*Candidate
	blocked    map[string]blocker
	// poolCost and poolDisruption sum the price and disruption cost of
	// each NodePool's initialized nodes (Balanced scoring).
	poolCost, poolDisruption map[string]float64
	// approvals are the Balanced NodePools' acceptances of moves found
	// this pass; the controller turns them into events.
	approvals []approval
	// rollouts are the rollout budgets of the candidates' pods, by
	// controller UID, and rolloutTakes how many available pods of each
	// every node holds (rollout.go).
	rollouts     map[types.UID]*scheduling.RolloutBudget
	rolloutTakes map[string]map[types.UID]int
}

// approval is a Balanced NodePool accepting a move with its score.
type approval struct {
	cmd      Command
	nodePool *karpv1.NodePool
	score    balancedScore
}

// block records why the node stays, unless the pass has a reason already
// (the first one found stands).
func (w *world) block(node, reason, format string, args ...any) {
	w.record(node, blocker{reason: reason, message: fmt.Sprintf(format, args...)})
}

// record records the blocker b of the node (see block); a zero blocker
// records nothing.
func (w *world) record(node string, b blocker) {
	if b.reason == "" {
		return
	}
	if _, ok := w.blocked[node]; !ok {
		w.blocked[node] = b
	}
}

// buildWorld gathers the candidates of a pass. queued holds the StateNode
// IDs owned by queued commands.
func (c *Controller) buildWorld(ctx context.Context, queued map[string]bool) *world {
	w := &world{now: c.clock.Now(), nodePools: map[string]*karpv1.NodePool{},
		types: map[string]map[string]*scheduling.InstanceType{}, typeList: map[string][]*scheduling.InstanceType{}, blocked: map[string]blocker{},
		poolCost: map[string]float64{}, poolDisruption: map[string]float64{}}
	for _, np := range c.cluster.NodePools() {
		w.nodePools[np.Name] = np
		w.poolNames = append(w.poolNames, np.Name)
		its, err := c.cloudProvider.GetInstanceTypes(ctx, np)
		if cloudprovider.IsUnevaluatedNodePoolError(err) {
			w.unevaluated = err
			continue
		}
		if err != nil {
			log.FromContext(ctx).Error(err, "listing instance types", "NodePool", np.Name)
			continue
		}
		byName := make(map[string]*scheduling.InstanceType, len(its))
		for _, it := range its {
			byName[it.Name] = it
		}
		w.types[np.Name] = byName
		w.typeList[np.Name] = its
	}
	pdbs := newPDBIndex(c.cluster.PDBs())
	rollouts := c.newRolloutIndex()
	w.stateNodes = c.cluster.Nodes()
	w.awaited = c.cluster.AwaitedPods()
	for _, sn := range w.stateNodes {
		if !sn.Managed() || sn.Node == nil || !sn.Initialized() || queued[sn.ID()] || sn.MarkedForDeletion {
			continue
		}
		if cand := c.newCandidate(ctx, w, sn, pdbs, rollouts); cand != nil {
			w.candidates = append(w.candidates, cand)
		}
	}
	sort.SliceStable(w.candidates, func(i, j int) bool {
		return w.candidates[i].DisruptionCost < w.candidates[j].DisruptionCost
	})
	return w
}

// newCandidate returns the node as a candidate, or nil after recording why
// it is not one.
func (c *Controller) newCandidate(ctx context.Context, w *world, sn *state.StateNode, pdbs *pdbIndex, rollouts *rolloutIndex) *Candidate {
	name := sn.Name()
	np := w.nodePools[sn.NodePool()]
	if np == nil {
		w.block(name, BlockedNodePool, "NodePool %q not found", sn.NodePool())
		return nil
	}
	lbls := sn.Node.Labels
	cand := &Candidate{StateNode: sn, NodePool: np, Zone: lbls[corev1.LabelTopologyZone],
		CapacityType: lbls[karpv1.CapacityTypeLabelKey]}
	if it := w.types[np.Name][lbls[corev1.LabelInstanceTypeStable]]; it != nil {
		cand.InstanceType = it
		cand.Price = offeringPrice(it, cand.Zone, cand.CapacityType)
	}
	cost := 1.0
	for _, pod := range sn.Pods {
		if !state.IsReschedulable(pod) {
			continue
		}
		cand.ReschedulablePods = append(cand.ReschedulablePods, pod)
		cost += max(0, evictionCost(pod))
	}
	cand.DisruptionCost = cost * lifetimeRemaining(np, sn.NodeClaim, w.now)
	w.poolCost[np.Name] += cand.Price
	w.poolDisruption[np.Name] += cand.DisruptionCost
	if f, ok := c.failed[sn.NodeClaim.Name]; ok && w.now.Before(f.until) {
		w.block(name, BlockedFailedDisruption, "%d disruption(s) of the node failed, the last because %s; next attempt after %s",
			f.count, f.why, f.until.UTC().Format(time.RFC3339))
		return nil
	}
	if len(sn.Nominated) > 0 {
		w.block(name, BlockedNominated, "node is nominated for %d pending pod(s)", len(sn.Nominated))
		return nil
	}
	if awaited := w.awaited[sn.Node.Name]; len(awaited) > 0 {
		// karp's own nomination of these pods ran out (a loaded scheduler
		// can take longer than its TTL to reach them), but the scheduler
		// has not tried them since they were sent here.
		w.block(name, BlockedNominated, "node is the nominated node of %d pending pod(s) the scheduler has yet to try",
			len(awaited))
		return nil
	}
	if c.cluster.BatchHeld(sn) {
		w.block(name, BlockedBatchHold, "node is held from the scheduler until its launch batch is ready")
		return nil
	}
	c.events.nodeDoNotDisrupt(sn)
	if sn.Node.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true" ||
		sn.NodeClaim.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true" {
		w.block(name, BlockedDoNotDisrupt, "node has the %s annotation", karpv1.DoNotDisruptAnnotationKey)
		return nil
	}
	// A pod blocker keeps the node from every method, except that drift
	// may still take a node whose NodeClaim has a terminationGracePeriod.
	graceful := sn.NodeClaim.Spec.TerminationGracePeriod != nil
	// Every pod's do-not-disrupt annotation is explained (an invalid value
	// warned about), whichever pod blocks the node first.
	dnds := make([]doNotDisruptStatus, len(cand.ReschedulablePods))
	for i, pod := range cand.ReschedulablePods {
		dnds[i] = doNotDisrupt(pod, w.now)
		c.events.doNotDisrupt(string(sn.Node.UID), pod, dnds[i])
	}
	for i, pod := range cand.ReschedulablePods {
		if dnds[i].active {
			w.block(name, BlockedDoNotDisrupt, "pod %s/%s has the %s annotation", pod.Namespace, pod.Name,
				karpv1.DoNotDisruptAnnotationKey)
			return podBlocked(cand, graceful)
		}
		if job := c.runningJob(pod); job != "" {
			w.block(name, BlockedRunningJob, "pod %s/%s of Job %s is running; karp leaves its node until it ends "+
				"(%s: \"false\" on the pod, or --protect-running-jobs=false, lets it go)", pod.Namespace, pod.Name, job,
				karpv1.DoNotDisruptAnnotationKey)
			return podBlocked(cand, graceful)
		}
		if msg := pdbs.blocks(pod); msg != "" {
			w.block(name, BlockedPDB, "%s", msg)
			return podBlocked(cand, graceful)
		}
		if pdbs.covers(pod) {
			continue // a PDB's pod follows its PDB only
		}
		if msg := rollouts.check(ctx, w, name, pod); msg != "" {
			w.block(name, BlockedRolloutBudget, "%s", msg)
			return podBlocked(cand, graceful)
		}
	}
	return cand
}

// runningJob is the name of the Job that owns the pod when the pod is
// Running and protected as one (Options.ProtectRunningJobs, and no
// karpenter.sh/do-not-disrupt: "false" on the pod); else "". A Job's pod
// that has not started yet or has ended is not protected: nothing of its
// work is lost.
func (c *Controller) runningJob(pod *corev1.Pod) string {
	if !c.opts.ProtectRunningJobs || pod.Status.Phase != corev1.PodRunning || pod.Annotations[karpv1.DoNotDisruptAnnotationKey] == "false" {
		return ""
	}
	for _, owner := range pod.OwnerReferences {
		if owner.Kind == "Job" && strings.HasPrefix(owner.APIVersion, "batch/") {
			return owner.Name
		}
	}
	return ""
}

// podBlocked returns the candidate marked PodBlocked when its NodeClaim has
// a terminationGracePeriod, else nil.
func podBlocked(cand *Candidate, graceful bool) *Candidate {
	if !graceful {
		return nil
	}
	cand.PodBlocked = true
	return cand
}

// mayTake reports whether method m may consider the candidate: a
// PodBlocked candidate only by eventual disruption (drift).
func mayTake(m Method, cand *Candidate) bool {
	return !cand.PodBlocked || m.Reason() == karpv1.DisruptionReasonDrifted
}

// offeringPrice is the price of the node's offering, else the cheapest
// price of the type, else 0.
func offeringPrice(it *scheduling.InstanceType, zone, capacityType string) float64 {
	if o, ok := it.OfferingIn(zone, capacityType); ok {
		return o.Price
	}
	best := math.Inf(1)
	for _, o := range it.Offerings {
		best = min(best, o.Price)
	}
	if math.IsInf(best, 1) {
		return 0
	}
	return best
}

// evictionCost is upstream's per-pod eviction cost: 1, plus the pod
// deletion cost and priority scaled down, clamped to [-10, 10].
func evictionCost(pod *corev1.Pod) float64 {
	cost := 1.0
	if v, ok := pod.Annotations[karpv1.PodDeletionCostAnnotationKey]; ok {
		if n, err := strconv.ParseFloat(v, 64); err == nil {
			cost += n / math.Pow(2, 27)
		}
	}
	if pod.Spec.Priority != nil {
		cost += float64(*pod.Spec.Priority) / math.Pow(2, 25)
	}
	return min(10, max(-10, cost))
}

// lifetimeRemaining is the fraction of expireAfter the node has left (1
// without expiry): nodes about to expire are cheaper to disrupt.
func lifetimeRemaining(np *karpv1.NodePool, nc *karpv1.NodeClaim, now time.Time) float64 {
	expire := nc.Spec.ExpireAfter.Duration
	if expire == nil {
		expire = np.Spec.Template.Spec.ExpireAfter.Duration
	}
	if expire == nil || *expire <= 0 {
		return 1
	}
	age := now.Sub(nc.CreationTimestamp.Time)
	return min(1, max(0, 1-float64(age)/float64(*expire)))
}

// doNotDisruptStatus is what a pod's karpenter.sh/do-not-disrupt
// annotation means at a time.
type doNotDisruptStatus struct {
	// active: the pod blocks voluntary disruption of its node
	// (scheduling.DoNotDisruptActive, the one rule drain uses too).
	active bool
	// until is when a duration-valued annotation elapses (zero for "true",
	// no annotation, or a pod not started yet, which stays protected).
	until time.Time
	// invalid says why a value is ignored (neither "true" nor a positive
	// duration), as upstream ignores it.
	invalid string
}

// doNotDisrupt reads the pod's do-not-disrupt annotation for the events
// that explain it; whether it protects the pod is DoNotDisruptActive's
// rule: "true", or a positive duration counted from the pod's start.
func doNotDisrupt(pod *corev1.Pod, now time.Time) doNotDisruptStatus {
	st := doNotDisruptStatus{active: scheduling.DoNotDisruptActive(pod, now), invalid: scheduling.DoNotDisruptInvalid(pod)}
	if st.invalid != "" || pod.Status.StartTime == nil {
		return st
	}
	if d, err := time.ParseDuration(pod.Annotations[karpv1.DoNotDisruptAnnotationKey]); err == nil && d > 0 {
		st.until = pod.Status.StartTime.Add(d)
	}
	return st
}

// pdbIndex finds the PDBs that cover a pod.
type pdbIndex struct {
	byNamespace map[string][]pdbEntry
}

type pdbEntry struct {
	pdb      *policyv1.PodDisruptionBudget
	selector labels.Selector
}

func newPDBIndex(pdbs []*policyv1.PodDisruptionBudget) *pdbIndex {
	idx := &pdbIndex{byNamespace: map[string][]pdbEntry{}}
	for _, pdb := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || pdb.Spec.Selector == nil {
			continue
		}
		idx.byNamespace[pdb.Namespace] = append(idx.byNamespace[pdb.Namespace], pdbEntry{pdb: pdb, selector: sel})
	}
	return idx
}

// blocks explains why evicting the pod would be refused, or returns "".
// A pod covered by more than one PDB cannot be evicted at all; a pod whose
// PDB allows no disruption cannot be evicted now, unless the pod is not
// ready and the PDB lets unhealthy pods go.
func (x *pdbIndex) blocks(pod *corev1.Pod) string {
	var names []string
	var only *policyv1.PodDisruptionBudget
	for _, e := range x.byNamespace[pod.Namespace] {
		if e.selector.Matches(labels.Set(pod.Labels)) {
			names = append(names, e.pdb.Name)
			only = e.pdb
		}
	}
	switch {
	case len(names) > 1:
		return fmt.Sprintf("pod %s/%s is covered by more than one PDB (%s)", pod.Namespace, pod.Name, strings.Join(names, ", "))
	case len(names) == 0:
		return ""
	}
	if only.Status.DisruptionsAllowed > 0 {
		return ""
	}
	if p := only.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow && !podReady(pod) {
		return ""
	}
	return fmt.Sprintf("PDB %s/%s prevents evicting pod %s/%s", only.Namespace, only.Name, pod.Namespace, pod.Name)
}

// covers reports whether a PDB selects the pod.
func (x *pdbIndex) covers(pod *corev1.Pod) bool {
	for _, e := range x.byNamespace[pod.Namespace] {
		if e.selector.Matches(labels.Set(pod.Labels)) {
			return true
		}
	}
	return false
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
