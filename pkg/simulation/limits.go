package simulation

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// Limits admits new NodeClaims against their NodePools' limits and the
// cluster-wide limits, counting the nodes that exist and each NodeClaim
// already admitted as the largest instance type it lists: the provider
// may launch any of them, so a limit holds whichever one it picks. The
// provisioner and `karp simulate` admit through it alike, so both show the
// same NodeClaims.
type Limits struct {
	usage map[string]*poolUsage
	// cluster caps every NodePool's nodes together (--cluster-limits);
	// total is what they hold.
	cluster corev1.ResourceList
	total   poolUsage
}

// poolUsage is what a NodePool's nodes hold: capacity and node count.
type poolUsage struct {
	resources corev1.ResourceList
	nodes     int64
}

// NewLimits counts the capacity of nodes (registered and in flight) per
// NodePool, and, for the cluster-wide limits (none when nil), of every
// NodePool's nodes together.
func NewLimits(nodes []*Node, cluster corev1.ResourceList) *Limits {
	l := &Limits{usage: map[string]*poolUsage{}, cluster: cluster, total: poolUsage{resources: corev1.ResourceList{}}}
	for _, n := range nodes {
		if pool := n.Labels[karpv1.NodePoolLabelKey]; pool != "" {
			l.add(pool, n.Capacity)
		}
	}
	return l
}

// Admit returns nc as the limits allow it, and counts it: a copy whose
// instance types are narrowed to those that fit when its largest listed
// type would break a limit; or nil and why not (NodePoolLimit or
// ClusterLimit), when even the type the solver chose would.
func (l *Limits) Admit(np *karpv1.NodePool, nc *NodeClaim) (*NodeClaim, scheduling.Reason) {
	out := *nc
	if len(np.Spec.Limits) == 0 && len(l.cluster) == 0 {
		l.add(np.Name, MaximumCapacity(out.InstanceTypes))
		return &out, scheduling.Reason{}
	}
	if reason := l.exceededBy(np, nc.InstanceType.Capacity); reason.Code != "" {
		return nil, reason
	}
	if l.exceededBy(np, MaximumCapacity(nc.InstanceTypes)).Code != "" {
		// The chosen type fits, a larger listed one does not: keep the
		// types that fit (in their listed order). Each fits on its own,
		// so their element-wise maximum does too.
		var kept []*scheduling.InstanceType
		var names []string
		for _, it := range nc.InstanceTypes {
			if l.exceededBy(np, it.Capacity).Code == "" {
				kept = append(kept, it)
				names = append(names, it.Name)
			}
		}
		out.InstanceTypes = kept
		out.Requirements = nc.Requirements.Copy()
		narrowed := scheduling.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, names...)
		if old := nc.Requirements.Get(corev1.LabelInstanceTypeStable); old != nil {
			narrowed.MinValues = old.MinValues
		}
		delete(out.Requirements, corev1.LabelInstanceTypeStable)
		out.Requirements.Add(narrowed)
	}
	l.add(np.Name, MaximumCapacity(out.InstanceTypes))
	return &out, scheduling.Reason{}
}

// exceededBy says which limit, the NodePool's or the cluster's, launching
// a node of the given capacity would break; the zero Reason when none.
func (l *Limits) exceededBy(np *karpv1.NodePool, capacity corev1.ResourceList) scheduling.Reason {
	u := l.usage[np.Name]
	if u == nil {
		u = &poolUsage{resources: corev1.ResourceList{}}
	}
	if msg := exceeded(corev1.ResourceList(np.Spec.Limits), u, capacity); msg != "" {
		return scheduling.PoolReason(np.Name, scheduling.ReasonNodePoolLimit, msg)
	}
	if msg := exceeded(l.cluster, &l.total, capacity); msg != "" {
		return scheduling.PoolReason(np.Name, scheduling.ReasonClusterLimit, "cluster-wide "+msg)
	}
	return scheduling.Reason{}
}

// exceeded names the limit of limits that u plus one node of capacity
// would break, or "".
func exceeded(limits corev1.ResourceList, u *poolUsage, capacity corev1.ResourceList) string {
	if len(limits) == 0 {
		return ""
	}
	next := u.resources.DeepCopy()
	addResources(next, capacity)
	next["nodes"] = *resource.NewQuantity(u.nodes+1, resource.DecimalSI)
	for _, name := range slices.Sorted(maps.Keys(limits)) {
		limit := limits[name]
		if used, ok := next[name]; ok && used.Cmp(limit) > 0 {
			inUse := u.resources.Name(name, resource.DecimalSI)
			if name == "nodes" {
				inUse = resource.NewQuantity(u.nodes, resource.DecimalSI)
			}
			return fmt.Sprintf("limit %s=%s would be exceeded (%s in use)", name, limit.String(), inUse.String())
		}
	}
	return ""
}

func (l *Limits) add(pool string, capacity corev1.ResourceList) {
	u := l.usage[pool]
	if u == nil {
		u = &poolUsage{resources: corev1.ResourceList{}}
		l.usage[pool] = u
	}
	addResources(u.resources, capacity)
	u.nodes++
	addResources(l.total.resources, capacity)
	l.total.nodes++
}

func addResources(sum, more corev1.ResourceList) {
	for name, q := range more {
		total := sum[name]
		total.Add(q)
		sum[name] = total
	}
}

// MaximumCapacity is the element-wise maximum capacity of types.
func MaximumCapacity(types []*scheduling.InstanceType) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, it := range types {
		for name, q := range it.Capacity {
			if cur, ok := out[name]; !ok || q.Cmp(cur) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}

// AdmitLimits admits res's NodeClaims in order against their NodePools'
// limits (see Limits): narrowed ones are replaced, and the pods of one
// whose chosen type breaks a limit join PodErrors, Unschedulable with the
// limit named. res.Order is rewritten to the NodeClaims kept.
func AdmitLimits(in Input, res *Result) {
	limits := NewLimits(in.Nodes, in.ClusterLimits)
	index := make([]int, len(res.NodeClaims)) // old NodeClaim index -> new, -1 dropped
	var kept []*NodeClaim
	for i, nc := range res.NodeClaims {
		fitted, reason := limits.Admit(nc.NodePool, nc)
		if reason.Code != "" {
			index[i] = -1
			for _, pod := range nc.Pods {
				res.PodErrors = append(res.PodErrors, PodError{Pod: pod, Status: scheduling.NewStatus(scheduling.Unschedulable, reason)})
			}
			continue
		}
		index[i] = len(kept)
		kept = append(kept, fitted)
	}
	res.NodeClaims = kept
	order := res.Order[:0]
	for _, p := range res.Order {
		if p.NodeClaim >= 0 {
			if index[p.NodeClaim] < 0 {
				continue
			}
			p.NodeClaim = index[p.NodeClaim]
		}
		order = append(order, p)
	}
	res.Order = order
}
