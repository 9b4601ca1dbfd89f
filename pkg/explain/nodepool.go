package explain

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// NodePoolReport is `karp explain nodepool`'s answer.
type NodePoolReport struct {
	NodePool string `json:"nodePool"`
	// Ready is the NodePool's Ready condition.
	Ready *Condition `json:"ready,omitempty"`
	// Static is spec.replicas for a static NodePool.
	Static *int64 `json:"static,omitempty"`
	// Limits are spec.limits against what the NodePool's nodes use.
	Limits []LimitSummary `json:"limits,omitempty"`
	// Nodes counts the NodePool's nodes and PricePerHour sums their prices.
	Nodes        int     `json:"nodes"`
	PricePerHour float64 `json:"pricePerHour"`
	// Budgets are the disruptions allowed now, by reason, and the next
	// change.
	Budgets []BudgetSummary `json:"budgets"`
	// Pending are the pending pods karp would launch nodes of this
	// NodePool for; Blocked the pending pods this NodePool's limit keeps
	// pending.
	Pending []string `json:"pending,omitempty"`
	Blocked []string `json:"blocked,omitempty"`
	// Drifted and Expiring (within a day) are its nodes due for
	// replacement.
	Drifted  []string `json:"drifted,omitempty"`
	Expiring []string `json:"expiring,omitempty"`
	// Overlays are the NodeOverlays that set a price or capacity on its
	// instance types, and those the controller refuses; Buffers the
	// CapacityBuffers and the room its next launch keeps for each.
	Overlays []OverlaySummary `json:"overlays,omitempty"`
	Buffers  []BufferSummary  `json:"buffers,omitempty"`
}

// LimitSummary is one limit and its use.
type LimitSummary struct {
	Resource corev1.ResourceName `json:"resource"`
	Limit    resource.Quantity   `json:"limit"`
	Used     resource.Quantity   `json:"used"`
	// Reached is true when the use is at or above the limit.
	Reached bool `json:"reached"`
}

// expiringWithin is how soon an expiry counts as "expiring".
const expiringWithin = 24 * time.Hour

// NodePool explains a NodePool: its use against limits, what its budgets
// allow, what it would launch and what it will replace.
func (e *Engine) NodePool(ctx context.Context, name string) (*NodePoolReport, error) {
	p, err := e.disruptionPreview(ctx)
	if err != nil {
		return nil, err
	}
	np := p.NodePool(name)
	if np == nil {
		return nil, fmt.Errorf("NodePool %q not found", name)
	}
	now := e.clock.Now()
	r := &NodePoolReport{NodePool: name, Budgets: e.budgets(p, np, now), Static: np.Spec.Replicas}
	if c := np.StatusConditions().Get(karpv1.ConditionTypeReady); c != nil {
		r.Ready = &Condition{Reason: c.Reason, Message: c.Message}
	}
	used := corev1.ResourceList{"nodes": *resource.NewQuantity(0, resource.DecimalSI)}
	for _, sn := range p.Nodes {
		if !sn.Managed() || sn.NodePool() != name {
			continue
		}
		r.Nodes++
		l := sn.Labels()
		r.PricePerHour += e.price(ctx, name, l[corev1.LabelInstanceTypeStable], l[corev1.LabelTopologyZone], l[karpv1.CapacityTypeLabelKey])
		for k, q := range sn.Capacity() {
			v := used[k]
			v.Add(q)
			used[k] = v
		}
		nodes := used["nodes"]
		nodes.Add(*resource.NewQuantity(1, resource.DecimalSI))
		used["nodes"] = nodes
		nc := sn.NodeClaim
		if c := nc.StatusConditions().Get(karpv1.ConditionTypeDrifted); c != nil && c.Status == metav1.ConditionTrue {
			r.Drifted = append(r.Drifted, sn.Name())
		}
		if d := nc.Spec.ExpireAfter.Duration; d != nil && nc.CreationTimestamp.Add(*d).Sub(now) < expiringWithin {
			r.Expiring = append(r.Expiring, sn.Name())
		}
	}
	r.PricePerHour = math.Round(r.PricePerHour*1e4) / 1e4
	for k, limit := range np.Spec.Limits {
		u := used[k]
		r.Limits = append(r.Limits, LimitSummary{Resource: k, Limit: limit, Used: u, Reached: u.Cmp(limit) >= 0})
	}
	sort.Slice(r.Limits, func(i, j int) bool { return r.Limits[i].Resource < r.Limits[j].Resource })
	plan, err := e.provisioning(ctx)
	if err != nil {
		return nil, err
	}
	planned := map[types.NamespacedName]int{}
	if plan != nil {
		for _, nc := range plan.Result.NodeClaims {
			if nc.NodePool.Name != name {
				continue
			}
			for _, pod := range nc.Pods {
				if key, ok := buffers.KeyOf(pod); ok {
					planned[key]++
					continue
				}
				r.Pending = append(r.Pending, pod.Namespace+"/"+pod.Name)
			}
		}
		for _, pe := range plan.Result.PodErrors {
			if pe.Status == nil {
				continue
			}
			for _, why := range pe.Status.Reasons {
				if why.NodePool == name && why.Code == scheduling.ReasonNodePoolLimit {
					r.Blocked = append(r.Blocked, pe.Pod.Namespace+"/"+pe.Pod.Name)
				}
			}
		}
	}
	r.Overlays = e.overlaySummaries(ctx, name)
	r.Buffers = e.bufferSummaries(planned)
	return r, nil
}
