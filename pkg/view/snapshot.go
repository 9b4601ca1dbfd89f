package view

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// OfferingKey names one priced offering.
type OfferingKey struct {
	InstanceType string
	Zone         string
	CapacityType string
}

// PriceTable maps offerings to their hourly price.
type PriceTable map[OfferingKey]float64

// NewPriceTable indexes the offerings of types by instance type, zone and
// capacity type.
func NewPriceTable(types []*scheduling.InstanceType) PriceTable {
	table := PriceTable{}
	for _, it := range types {
		for _, o := range it.Offerings {
			table[OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}] = o.Price
		}
	}
	return table
}

// NodeRow is one Node of the view.
type NodeRow struct {
	Name         string
	NodePool     string
	InstanceType string
	Zone         string
	CapacityType string
	// Price is the offering's $/hour; Priced is false when the catalog
	// does not know the offering (a Node karp did not launch).
	Price  float64
	Priced bool
	Ready  bool
	// Pods counts the non-terminal pods bound to the Node.
	Pods              int
	CPURequested      resource.Quantity
	CPUAllocatable    resource.Quantity
	MemoryRequested   resource.Quantity
	MemoryAllocatable resource.Quantity
	MarkedForDeletion bool
	// WhyNot is why karp keeps the node: its NodeClaim's DisruptionBlocked
	// condition, "Code: message" ("" when none).
	WhyNot string
}

// PendingRow is a pending pod and karp's one-line reason.
type PendingRow struct {
	Pod string
	// Reason is the most telling reason of karp's latest FailedScheduling
	// event ("" when karp has said nothing yet).
	Reason string
}

// Snapshot is what the view shows at one moment.
type Snapshot struct {
	Nodes []NodeRow
	// PendingPods counts non-terminal pods bound to no Node; Pending lists
	// them by namespace/name.
	PendingPods int
	Pending     []PendingRow
	// RunningPods counts pods in phase Running.
	RunningPods int
	// TotalPrice sums the priced Nodes' $/hour.
	TotalPrice float64
}

// Build makes the Snapshot of nodes and pods, rows sorted by NodePool then
// name.
func Build(nodes []*corev1.Node, pods []*corev1.Pod, prices PriceTable) Snapshot {
	rows := make(map[string]*NodeRow, len(nodes))
	snap := Snapshot{Nodes: make([]NodeRow, 0, len(nodes))}
	for _, node := range nodes {
		row := nodeRow(node, prices)
		snap.Nodes = append(snap.Nodes, row)
		if row.Priced {
			snap.TotalPrice += row.Price
		}
	}
	for i := range snap.Nodes {
		rows[snap.Nodes[i].Name] = &snap.Nodes[i]
	}
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		if pod.Status.Phase == corev1.PodRunning {
			snap.RunningPods++
		}
		if pod.Spec.NodeName == "" {
			snap.PendingPods++
			snap.Pending = append(snap.Pending, PendingRow{Pod: pod.Namespace + "/" + pod.Name})
			continue
		}
		row, ok := rows[pod.Spec.NodeName]
		if !ok {
			continue
		}
		requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		row.Pods++
		row.CPURequested.Add(requests[corev1.ResourceCPU])
		row.MemoryRequested.Add(requests[corev1.ResourceMemory])
	}
	slices.SortFunc(snap.Nodes, func(a, b NodeRow) int {
		return cmp.Or(cmp.Compare(a.NodePool, b.NodePool), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(snap.Pending, func(a, b PendingRow) int { return cmp.Compare(a.Pod, b.Pod) })
	return snap
}

// Explain adds karp's reasons: podEvents maps "namespace/name" to the
// message of karp's latest FailedScheduling event on the pod, nodeBlocked
// maps a node's name to its NodeClaim's DisruptionBlocked "Code: message".
func (s *Snapshot) Explain(podEvents, nodeBlocked map[string]string) {
	for i := range s.Pending {
		s.Pending[i].Reason = OneLine(podEvents[s.Pending[i].Pod])
	}
	for i := range s.Nodes {
		s.Nodes[i].WhyNot = nodeBlocked[s.Nodes[i].Name]
	}
}

// OneLine picks the most telling reason of a FailedScheduling message:
// the first NodePool's that is not merely incompatible requirements (a
// pod meant for one NodePool is incompatible with all the others), with
// how many NodePools the message names.
func OneLine(message string) string {
	reasons := scheduling.ParseReasons(message)
	if len(reasons) == 0 {
		return message
	}
	best := reasons[0]
	for _, r := range reasons {
		if r.Code != scheduling.ReasonIncompatibleRequirements {
			best = r
			break
		}
	}
	line := best.String()
	if len(reasons) > 1 {
		line += fmt.Sprintf(" (+%d more)", len(reasons)-1)
	}
	return line
}

func nodeRow(node *corev1.Node, prices PriceTable) NodeRow {
	labels := node.Labels
	row := NodeRow{
		Name:              node.Name,
		NodePool:          labels[karpv1.NodePoolLabelKey],
		InstanceType:      labels[corev1.LabelInstanceTypeStable],
		Zone:              labels[corev1.LabelTopologyZone],
		CapacityType:      labels[karpv1.CapacityTypeLabelKey],
		CPUAllocatable:    node.Status.Allocatable[corev1.ResourceCPU],
		MemoryAllocatable: node.Status.Allocatable[corev1.ResourceMemory],
		MarkedForDeletion: !node.DeletionTimestamp.IsZero(),
	}
	row.Price, row.Priced = prices[OfferingKey{InstanceType: row.InstanceType, Zone: row.Zone, CapacityType: row.CapacityType}]
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			row.Ready = c.Status == corev1.ConditionTrue
		}
	}
	return row
}
