package explain

import (
	"context"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// DisruptionOptions narrow `karp simulate --disruption`.
type DisruptionOptions struct {
	// NodePool keeps only that NodePool's nodes and commands.
	NodePool string
	// Method keeps only the commands of that method ("emptiness",
	// "drift", "multi", "single", ...).
	Method string
	// Remove asks "what if these nodes went away?" instead.
	Remove []string
}

// DisruptionReport is what the disruption methods would do now.
type DisruptionReport struct {
	// Commands are the methods' decisions in the controller's order; the
	// first is what it would start now. Each lists where the pods go.
	Commands []PlannedCommand `json:"commands"`
	// Kept are the managed nodes no command takes, and why.
	Kept []NodeVerdict `json:"kept"`
	// Removed answers --remove: where the nodes' pods would go.
	Removed *Moves `json:"removed,omitempty"`
}

// PlannedCommand is a command and the moves of its pods.
type PlannedCommand struct {
	CommandSummary
	Moves Moves `json:"moves"`
}

// NodeVerdict is why a node stays: its status and, when blocked, the
// DisruptionBlocked reason code.
type NodeVerdict struct {
	Node     string `json:"node"`
	NodePool string `json:"nodePool,omitempty"`
	Status   string `json:"status"`
	Code     string `json:"code,omitempty"`
	Message  string `json:"message"`
}

// Moves says where pods go: to a node that exists, to a new node, or
// nowhere (Pending, with the reason).
type Moves struct {
	// To maps "namespace/name" to a node name or "new <instance type> in
	// NodePool <name>".
	To map[string]string `json:"to"`
	// Pending maps the pods that would stay pending to why.
	Pending map[string]string `json:"pending,omitempty"`
	// Replacements are the new nodes the pods need.
	Replacements []Target `json:"replacements,omitempty"`
	// PricePerHour is what the replacements cost.
	PricePerHour float64 `json:"pricePerHour"`
}

// Disruption previews the disruption methods over the cluster.
func (e *Engine) Disruption(ctx context.Context, opts DisruptionOptions) (*DisruptionReport, error) {
	p, err := e.disruptionPreview(ctx)
	if err != nil {
		return nil, err
	}
	r := &DisruptionReport{Commands: []PlannedCommand{}, Kept: []NodeVerdict{}}
	if len(opts.Remove) > 0 {
		res, err := p.Moves(ctx, opts.Remove...)
		if err != nil {
			return nil, err
		}
		m := movesOf(res, podsOf(p, opts.Remove))
		r.Removed = &m
	}
	taken := map[string]bool{}
	for _, cmd := range p.Commands {
		s := summarize(cmd)
		for _, c := range cmd.Candidates {
			taken[c.Name()] = true
		}
		if opts.Method != "" && s.Method != opts.Method || opts.NodePool != "" && cmd.Candidates[0].NodePool.Name != opts.NodePool {
			continue
		}
		res, err := p.Moves(ctx, s.Nodes...)
		if err != nil {
			return nil, err
		}
		r.Commands = append(r.Commands, PlannedCommand{CommandSummary: *s, Moves: movesOf(res, podsOf(p, s.Nodes))})
	}
	for _, sn := range p.Nodes {
		if !sn.Managed() || taken[sn.Name()] || opts.NodePool != "" && sn.NodePool() != opts.NodePool {
			continue
		}
		status, msg, blocked, _ := verdict(p, sn)
		v := NodeVerdict{Node: sn.Name(), NodePool: sn.NodePool(), Status: status, Message: msg}
		if blocked != nil {
			v.Code, v.Message = blocked.Reason, blocked.Message
		}
		r.Kept = append(r.Kept, v)
	}
	sort.Slice(r.Kept, func(i, j int) bool { return r.Kept[i].Node < r.Kept[j].Node })
	return r, nil
}

// podsOf are the pods that must move if the nodes go, by
// "namespace/name".
func podsOf(p *disruption.Preview, nodes []string) map[string]bool {
	want := map[string]bool{}
	for _, n := range nodes {
		want[n] = true
	}
	out := map[string]bool{}
	for _, sn := range p.Nodes {
		if !want[sn.Name()] {
			continue
		}
		for _, pod := range sn.Pods {
			if state.IsReschedulable(pod) {
				out[pod.Namespace+"/"+pod.Name] = true
			}
		}
	}
	return out
}

// movesOf reads where a what-if put each of the pods.
func movesOf(res *simulation.Consolidation, pods map[string]bool) Moves {
	m := Moves{To: map[string]string{}}
	if res == nil || res.Result == nil {
		return m
	}
	for _, ep := range res.Result.ExistingNodes {
		for _, pod := range ep.Pods {
			if key := pod.Namespace + "/" + pod.Name; pods[key] {
				m.To[key] = ep.Node.Name
			}
		}
	}
	for _, nc := range res.Result.NodeClaims {
		if !slices.ContainsFunc(nc.Pods, func(p *corev1.Pod) bool { return pods[p.Namespace+"/"+p.Name] }) {
			continue
		}
		t := Target{NodePool: nc.NodePool.Name, InstanceType: nc.InstanceType.Name, PricePerHour: nc.Price}
		if nc.Offering != nil {
			t.Zone, t.CapacityType = nc.Offering.Zone, nc.Offering.CapacityType
		}
		m.Replacements = append(m.Replacements, t)
		m.PricePerHour += nc.Price
		for _, pod := range nc.Pods {
			if !pods[pod.Namespace+"/"+pod.Name] {
				continue
			}
			m.To[pod.Namespace+"/"+pod.Name] = fmt.Sprintf("new %s in NodePool %s", nc.InstanceType.Name, nc.NodePool.Name)
		}
	}
	for _, pe := range res.Result.PodErrors {
		if !pods[pe.Pod.Namespace+"/"+pe.Pod.Name] {
			continue
		}
		if m.Pending == nil {
			m.Pending = map[string]string{}
		}
		m.Pending[pe.Pod.Namespace+"/"+pe.Pod.Name] = pe.Status.Message()
	}
	return m
}
