package simulate

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/manifest"
	"github.com/karp-autoscaler/karp/pkg/render"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// Report is the outcome of a dry-run, as printed by `-o json`.
type Report struct {
	// NodeClaims are the nodes karp would launch, in creation order.
	NodeClaims []NodeClaimSummary `json:"nodeClaims"`
	// ExistingNodes lists pods that fit on nodes given in the manifests.
	ExistingNodes []ExistingNodeSummary `json:"existingNodes,omitempty"`
	// Unschedulable are the pods that would stay pending, in input order.
	Unschedulable []Unschedulable `json:"unschedulable"`
	// TotalPricePerHour sums the NodeClaims' prices ($/hour).
	TotalPricePerHour float64 `json:"totalPricePerHour"`
	// TotalPricePerMonth is TotalPricePerHour × 730.
	TotalPricePerMonth float64 `json:"totalPricePerMonth"`
	// TotalNodes is len(NodeClaims).
	TotalNodes int `json:"totalNodes"`
	// TotalPods counts the pods placed on new NodeClaims.
	TotalPods int `json:"totalPods"`
	// PendingPods counts every pod that needed a place.
	PendingPods int `json:"pendingPods"`
	// Buffers are the room kept for each CapacityBuffer, apart from the
	// pods (their virtual pods are in no Pods list nor Unschedulable).
	Buffers []BufferSummary `json:"buffers,omitempty"`
	// BufferPricePerHour is what the buffers add to TotalPricePerHour: the
	// run's price minus the price of the same run without them.
	BufferPricePerHour float64 `json:"bufferPricePerHour,omitempty"`
	// ProvisioningRequests are the answers to the ProvisioningRequests
	// (not counted in the totals: nothing is launched for them unless they
	// fit, and then only for them).
	ProvisioningRequests []RequestSummary `json:"provisioningRequests,omitempty"`
	// Warnings list ignored input and assumptions made.
	Warnings []string `json:"warnings,omitempty"`

	// claims are the objects `-o yaml` prints.
	claims []*karpv1.NodeClaim
}

// NodeClaimSummary is one node karp would launch.
type NodeClaimSummary struct {
	NodePool     string  `json:"nodePool"`
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	PricePerHour float64 `json:"pricePerHour"`
	// Pods are "namespace/name", in placement order.
	Pods []string `json:"pods"`
	// Requests are the pods' requests plus DaemonSetOverhead.
	Requests    corev1.ResourceList `json:"requests"`
	Allocatable corev1.ResourceList `json:"allocatable"`
	// DaemonSetOverhead is what the DaemonSets landing on the node request.
	DaemonSetOverhead corev1.ResourceList `json:"daemonSetOverhead"`
	// InstanceTypeOptions are every type the NodeClaim allows, cheapest
	// first; the provider launches the cheapest available one.
	InstanceTypeOptions []string `json:"instanceTypeOptions"`
	// Static is set on the nodes of a static NodePool (spec.replicas),
	// launched by the static controller whatever the pods need; Pods are
	// then those kube-scheduler would place there once the node exists.
	Static bool `json:"static,omitempty"`
	// BufferPods counts the CapacityBuffers' virtual pods the node holds
	// room for (Requests include them).
	BufferPods int `json:"bufferPods,omitempty"`
}

// ExistingNodeSummary lists the pods placed on an existing node.
type ExistingNodeSummary struct {
	Node string   `json:"node"`
	Pods []string `json:"pods"`
}

// Unschedulable is a pod that would stay pending and why.
type Unschedulable struct {
	Pod string `json:"pod"`
	// Code is Unschedulable (may fit once the cluster changes, e.g. a
	// limit frees up) or UnschedulableAndUnresolvable (needs a
	// configuration change).
	Code string `json:"code"`
	// Reasons are the simulator's, one per NodePool (or node) tried, as
	// the FailedScheduling event prints them.
	Reasons []string `json:"reasons"`
	// Details are the same reasons structured: NodePool, stable code and
	// message.
	Details []scheduling.Reason `json:"details"`
}

// NodeClaimObjects returns the karpv1.NodeClaim objects karp would create.
func (r *Report) NodeClaimObjects() []*karpv1.NodeClaim { return r.claims }

// AllPlaced reports whether every pending pod found a place.
func (r *Report) AllPlaced() bool { return len(r.Unschedulable) == 0 }

func newReport(res *simulation.Result, cluster *manifest.Cluster, statics []staticNode) *Report {
	rep := &Report{NodeClaims: []NodeClaimSummary{}, Unschedulable: []Unschedulable{}, PendingPods: len(cluster.Pending)}
	placed := map[*simulation.Node][]*corev1.Pod{}
	for _, ep := range res.ExistingNodes {
		placed[ep.Node] = ep.Pods
	}
	// 1. The static NodePools' nodes, with the pods kube-scheduler would
	// place there once they exist.
	for _, sn := range statics {
		nc := *sn.claim
		nc.Pods = placed[sn.node]
		nc.Requests = addRequests(nc.Requests, nc.Pods)
		s, _ := claimSummary(&nc)
		s.Static = true
		// The NodeClaim as the static controller creates it: no pods.
		rep.add(s, nodeClaimObject(sn.claim))
		delete(placed, sn.node)
	}
	// 2. The NodeClaims the provisioner would create.
	for _, nc := range res.NodeClaims {
		rep.add(claimSummary(nc))
	}
	rep.TotalNodes = len(rep.NodeClaims)
	rep.TotalPricePerHour = roundCents(rep.TotalPricePerHour)
	rep.TotalPricePerMonth = roundCents(rep.TotalPricePerHour * HoursPerMonth)
	for _, ep := range res.ExistingNodes {
		if _, existing := placed[ep.Node]; !existing {
			continue
		}
		s := ExistingNodeSummary{Node: ep.Node.Name}
		for _, p := range ep.Pods {
			if !buffers.IsVirtual(p) {
				s.Pods = append(s.Pods, podKey(p))
			}
		}
		if len(s.Pods) > 0 {
			rep.ExistingNodes = append(rep.ExistingNodes, s)
		}
	}
	for _, pe := range res.PodErrors {
		if buffers.IsVirtual(pe.Pod) {
			continue
		}
		rep.Unschedulable = append(rep.Unschedulable, unschedulable(pe))
	}
	return rep
}

// add appends a node karp would launch and counts it.
func (r *Report) add(s NodeClaimSummary, obj *karpv1.NodeClaim) {
	r.NodeClaims = append(r.NodeClaims, s)
	r.claims = append(r.claims, obj)
	r.TotalPricePerHour += s.PricePerHour
	r.TotalPods += len(s.Pods)
}

// claimSummary describes a NodeClaim to launch: its real pods listed, its
// buffer pods counted.
func claimSummary(nc *simulation.NodeClaim) (NodeClaimSummary, *karpv1.NodeClaim) {
	s := NodeClaimSummary{NodePool: nc.NodePool.Name, InstanceType: nc.InstanceType.Name, PricePerHour: nc.Price,
		Requests: nc.Requests, Allocatable: nc.InstanceType.Allocatable, DaemonSetOverhead: nc.DaemonOverhead, Pods: []string{}}
	if nc.Offering != nil {
		s.Zone, s.CapacityType = nc.Offering.Zone, nc.Offering.CapacityType
	}
	for _, p := range nc.Pods {
		if buffers.IsVirtual(p) {
			s.BufferPods++
			continue
		}
		s.Pods = append(s.Pods, podKey(p))
	}
	for _, it := range nc.InstanceTypes {
		s.InstanceTypeOptions = append(s.InstanceTypeOptions, it.Name)
	}
	return s, nodeClaimObject(nc)
}

func unschedulable(pe simulation.PodError) Unschedulable {
	u := Unschedulable{Pod: podKey(pe.Pod), Reasons: []string{}, Details: []scheduling.Reason{}}
	if pe.Status != nil {
		u.Code = pe.Status.Code.String()
		for _, r := range pe.Status.Reasons {
			u.Reasons = append(u.Reasons, r.String())
		}
		u.Details = append(u.Details, pe.Status.Reasons...)
	}
	return u
}

// addRequests is base plus the pods' requests.
func addRequests(base corev1.ResourceList, pods []*corev1.Pod) corev1.ResourceList {
	out := base.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for _, p := range pods {
		for name, q := range scheduling.PodRequests(p) {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// nodeClaimObject is the NodeClaim the provisioner would create for a
// simulated one (the same renderer), with its TypeMeta for printing.
func nodeClaimObject(nc *simulation.NodeClaim) *karpv1.NodeClaim {
	obj := render.NodeClaim(nc)
	obj.TypeMeta = metav1.TypeMeta{APIVersion: karpv1.SchemeGroupVersion.String(), Kind: "NodeClaim"}
	return obj
}

// roundCents rounds to 1/10000 of a dollar, the catalog's precision, so
// sums of many prices print without float noise.
func roundCents(x float64) float64 { return math.Round(x*1e4) / 1e4 }
