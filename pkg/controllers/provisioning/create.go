package provisioning

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning/hint"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/render"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// act carries out the solver's decision: it nominates pods placed on
// existing or in-flight nodes, creates the new NodeClaims (recording each
// in state and nominating its pods at once, so the next batch does not
// provision for them again), and explains every pod left behind.
func (p *Provisioner) act(ctx context.Context, in *simulation.Input, res *simulation.Result, ids map[*simulation.Node]string) ([]string, error) {
	ttl := p.opts.NominationTTL()
	// 1. Pods that fit capacity that exists or is launching.
	for _, ep := range res.ExistingNodes {
		id := ids[ep.Node]
		for _, pod := range ep.Pods {
			if state.IsAwaitingScheduler(pod) || buffers.IsVirtual(pod) {
				// The scheduler will place it there on its own, or it is
				// a buffer's room, which nobody places.
				continue
			}
			p.cluster.Nominate(pod, id, ttl)
			p.recorder.Nominated(pod, id)
		}
	}
	// 2. New NodeClaims, re-checked against the limits of the NodePool as
	// it is now.
	if len(res.NodeClaims) > 0 {
		log.FromContext(ctx).Info("computed new nodeclaim(s) to fit pod(s)", "nodeclaims", len(res.NodeClaims), "pods", podCount(res))
	}
	allowed := p.admit(newLimitTracker(p.cluster, in), res.NodeClaims)
	names := make([]string, len(allowed))
	errs := make([]error, len(allowed))
	// Creates are independent; a large scale-up must not wait on one API
	// round trip per NodeClaim.
	// NodeClaims launched together are held from the scheduler together
	// (see package batchhold).
	batch := ""
	if p.opts.BatchHoldDuration > 0 && len(allowed) > 1 {
		batch = rand.String(10)
	}
	fill := hint.FillPods(withRealPods(allowed))
	hintHardDefaultSpread(fill, in.DefaultSpread)
	workqueue.ParallelizeUntil(ctx, createWorkers, len(allowed), func(i int) {
		names[i], errs[i] = p.create(ctx, allowed[i], ttl, batch, fill)
	})
	var created []string
	for _, name := range names {
		if name != "" {
			created = append(created, name)
		}
	}
	// 3. Pods karp cannot help, with the NodePools the pass skipped.
	note := SkippedNote(p.skipped)
	unschedulable := 0
	for _, pe := range res.PodErrors {
		if state.IsAwaitingScheduler(pe.Pod) || buffers.IsVirtual(pe.Pod) {
			// The scheduler has its say first; a buffer's room is its
			// Provisioning condition's business.
			continue
		}
		p.recorder.FailedScheduling(pe.Pod, pe.Status.Message()+note)
		unschedulable++
	}
	unschedulablePods.Set(float64(unschedulable))
	return created, errors.Join(errs...)
}

// createWorkers bounds concurrent NodeClaim creates.
const createWorkers = 16

// admit returns the NodeClaims the NodePools' limits still allow, in
// order, counting each admitted one against the next as the largest
// instance type it lists (the provider may launch any of them). A
// NodeClaim whose largest option would break a limit keeps only the types
// that fit; when its chosen type does not, the pods of the NodeClaim get
// a FailedScheduling event naming the limit.
func (p *Provisioner) admit(limits *limitTracker, claims []*simulation.NodeClaim) []*simulation.NodeClaim {
	var out []*simulation.NodeClaim
	for _, nc := range claims {
		nodePool := limits.current(nc.NodePool)
		fitted, reason := limits.limits.Admit(nodePool, nc)
		if reason.Code != "" {
			for _, pod := range nc.Pods {
				p.recorder.FailedScheduling(pod, reason.String())
			}
			continue
		}
		// Render from the NodePool as it is now.
		fitted.NodePool = nodePool
		out = append(out, fitted)
	}
	return out
}

// create creates one NodeClaim, records it in state and nominates its
// pods to it.
func (p *Provisioner) create(ctx context.Context, nc *simulation.NodeClaim, ttl time.Duration, batch string, fill map[types.UID]bool) (string, error) {
	nodePool := nc.NodePool
	obj := render.NodeClaim(nc)
	if batch != "" {
		obj.Annotations[karpv1.ProvisioningBatchAnnotationKey] = batch
	}
	if err := p.kubeClient.Create(ctx, obj); err != nil {
		return "", fmt.Errorf("creating nodeclaim for nodepool %s: %w", nodePool.Name, err)
	}
	p.cluster.UpdateNodeClaim(obj)
	metrics.NodeClaimsCreatedTotal.WithLabelValues(metrics.ReasonProvisioned, nodePool.Name,
		strconv.FormatBool(nc.MinValuesRelaxed)).Inc()
	log.FromContext(ctx).Info("created nodeclaim", "NodeClaim", obj.Name, "NodePool", nodePool.Name,
		"requests", obj.Spec.Resources.Requests, "instanceTypes", len(nc.InstanceTypes), "pods", len(nc.Pods))
	id := state.NodeClaimID(obj.Name)
	for _, pod := range realPods(nc.Pods) {
		if fill[pod.UID] {
			p.cluster.NominateUnhinted(pod, id, ttl)
		} else {
			p.cluster.Nominate(pod, id, ttl)
		}
		p.recorder.Nominated(pod, id)
	}
	return obj.Name, nil
}

func podCount(res *simulation.Result) int {
	n := 0
	for _, nc := range res.NodeClaims {
		n += len(nc.Pods)
	}
	return n
}

// limitTracker admits new NodeClaims against each NodePool's limits as
// state shows them now (simulation.Limits), counting what this pass
// already created.
type limitTracker struct {
	pools  map[string]*karpv1.NodePool
	limits *simulation.Limits
}

func newLimitTracker(cluster *state.Cluster, in *simulation.Input) *limitTracker {
	t := &limitTracker{pools: map[string]*karpv1.NodePool{}, limits: simulation.NewLimits(in.Nodes, in.ClusterLimits)}
	for _, np := range cluster.NodePools() {
		t.pools[np.Name] = np
	}
	return t
}

// current is the NodePool as state has it now (limits may have changed
// while solving), or the solver's copy when state lost it.
func (t *limitTracker) current(np *karpv1.NodePool) *karpv1.NodePool {
	if cur, ok := t.pools[np.Name]; ok {
		return cur
	}
	return np
}
