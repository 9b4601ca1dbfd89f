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

func newReport(res *simulation.Result, cluster *manifest.Cluster) *Report {
	rep := &Report{NodeClaims: []NodeClaimSummary{}, Unschedulable: []Unschedulable{}, PendingPods: len(cluster.Pending)}
	for _, nc := range res.NodeClaims {
		s := NodeClaimSummary{NodePool: nc.NodePool.Name, InstanceType: nc.InstanceType.Name, PricePerHour: nc.Price,
			Requests: nc.Requests, Allocatable: nc.InstanceType.Allocatable, DaemonSetOverhead: nc.DaemonOverhead}
		if nc.Offering != nil {
			s.Zone, s.CapacityType = nc.Offering.Zone, nc.Offering.CapacityType
		}
		for _, p := range nc.Pods {
			s.Pods = append(s.Pods, podKey(p))
		}
		for _, it := range nc.InstanceTypes {
			s.InstanceTypeOptions = append(s.InstanceTypeOptions, it.Name)
		}
		rep.NodeClaims = append(rep.NodeClaims, s)
		rep.claims = append(rep.claims, nodeClaimObject(nc))
		rep.TotalPricePerHour += nc.Price
		rep.TotalPods += len(nc.Pods)
	}
	rep.TotalNodes = len(res.NodeClaims)
	rep.TotalPricePerHour = roundCents(rep.TotalPricePerHour)
	rep.TotalPricePerMonth = roundCents(rep.TotalPricePerHour * HoursPerMonth)
	for _, ep := range res.ExistingNodes {
		s := ExistingNodeSummary{Node: ep.Node.Name}
		for _, p := range ep.Pods {
			s.Pods = append(s.Pods, podKey(p))
		}
		rep.ExistingNodes = append(rep.ExistingNodes, s)
	}
	for _, pe := range res.PodErrors {
		u := Unschedulable{Pod: podKey(pe.Pod), Reasons: []string{}, Details: []scheduling.Reason{}}
		if pe.Status != nil {
			u.Code = pe.Status.Code.String()
			for _, r := range pe.Status.Reasons {
				u.Reasons = append(u.Reasons, r.String())
			}
			u.Details = append(u.Details, pe.Status.Reasons...)
		}
		rep.Unschedulable = append(rep.Unschedulable, u)
	}
	return rep
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
