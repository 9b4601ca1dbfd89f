package explain

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
)

// What karp would do for a pod (PodReport.Decision).
const (
	// DecisionBound: the pod runs on a node; nothing to do.
	DecisionBound = "Bound"
	// DecisionExistingNode: a node that exists and is initialized has room;
	// the kube-scheduler should bind the pod there.
	DecisionExistingNode = "ExistingNode"
	// DecisionLaunching: a NodeClaim karp launched (not yet initialized)
	// will hold the pod.
	DecisionLaunching = "LaunchingNodeClaim"
	// DecisionNewNodeClaim: karp would launch a new node for the pod.
	DecisionNewNodeClaim = "NewNodeClaim"
	// DecisionUnschedulable: karp cannot place the pod; Reasons say why,
	// one per NodePool in weight order.
	DecisionUnschedulable = "Unschedulable"
	// DecisionWaiting: the pod is not karp's to place now (the scheduler
	// has not tried it, it is nominated, gated, terminal or deleting).
	DecisionWaiting = "Waiting"
)

// PodReport is `karp explain pod`'s answer.
type PodReport struct {
	Pod string `json:"pod"`
	// Phase is the pod's phase.
	Phase corev1.PodPhase `json:"phase"`
	// Node is the node the pod is bound to.
	Node string `json:"node,omitempty"`
	// NominatedNode is status.nominatedNodeName and NominatedBy who wrote
	// it: "karp" (its hint to the scheduler) or "kube-scheduler"
	// (preemption).
	NominatedNode string `json:"nominatedNode,omitempty"`
	NominatedBy   string `json:"nominatedBy,omitempty"`
	// Scheduler is the kube-scheduler's PodScheduled message: why no
	// existing node took the pod.
	Scheduler string `json:"scheduler,omitempty"`
	// Decision is what karp would do now (Decision* constants).
	Decision string `json:"decision"`
	// Target is where the pod would go (ExistingNode, LaunchingNodeClaim,
	// NewNodeClaim).
	Target *Target `json:"target,omitempty"`
	// PreferencesRelaxed is set when the pod fits there only once one of
	// its preferences (preferred affinity or anti-affinity, a
	// ScheduleAnyway spread, PreferNoSchedule taints) is given up.
	PreferencesRelaxed bool `json:"preferencesRelaxed,omitempty"`
	// Code is the scheduling code when Unschedulable: Unschedulable (may
	// fit once the cluster changes) or UnschedulableAndUnresolvable.
	Code string `json:"code,omitempty"`
	// Reasons are why the pod stays pending: each NodePool's first
	// blocker, in weight order, then the NodePools the provisioner skips.
	// They are the reasons of the pod's FailedScheduling event.
	Reasons []scheduling.Reason `json:"reasons,omitempty"`
	// Message says it in one line.
	Message string `json:"message"`
}

// Target is where a pod would go.
type Target struct {
	Node         string  `json:"node,omitempty"`
	NodeClaim    string  `json:"nodeClaim,omitempty"`
	NodePool     string  `json:"nodePool,omitempty"`
	InstanceType string  `json:"instanceType,omitempty"`
	Zone         string  `json:"zone,omitempty"`
	CapacityType string  `json:"capacityType,omitempty"`
	PricePerHour float64 `json:"pricePerHour,omitempty"`
}

// Pod explains one pod, "namespace/name" or "name" (default namespace).
func (e *Engine) Pod(ctx context.Context, key string) (*PodReport, error) {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		ns, name = metav1.NamespaceDefault, key
	}
	var pod *corev1.Pod
	for i := range e.pods {
		if e.pods[i].Namespace == ns && e.pods[i].Name == name {
			pod = &e.pods[i]
		}
	}
	if pod == nil {
		return nil, fmt.Errorf("pod %s/%s not found", ns, name)
	}
	r := &PodReport{Pod: ns + "/" + name, Phase: pod.Status.Phase, Node: pod.Spec.NodeName, NominatedNode: pod.Status.NominatedNodeName}
	if r.NominatedNode != "" {
		r.NominatedBy = "kube-scheduler"
		if state.IsSchedulerHint(pod) {
			r.NominatedBy = "karp"
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			r.Scheduler = c.Message
		}
	}
	if pod.Spec.NodeName != "" {
		r.Decision, r.Message = DecisionBound, "bound to node "+pod.Spec.NodeName
		return r, nil
	}
	if msg := notKarps(pod); msg != "" {
		r.Decision, r.Message = DecisionWaiting, msg
		return r, nil
	}
	plan, err := e.provisioning(ctx)
	if err != nil {
		return nil, err
	}
	if plan != nil && e.placePod(r, pod, plan) {
		return r, nil
	}
	r.Decision, r.Message = DecisionWaiting, "karp has not decided about the pod yet (it is not in the provisioner's batch)"
	return r, nil
}

// notKarps says why a pending pod is not the provisioner's to place now,
// or "".
func notKarps(pod *corev1.Pod) string {
	switch {
	case pod.DeletionTimestamp != nil:
		return "the pod is being deleted"
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return "the pod has ended (" + string(pod.Status.Phase) + ")"
	case len(pod.Spec.SchedulingGates) > 0:
		return fmt.Sprintf("the pod has scheduling gates (%s); nothing schedules it until they are removed", pod.Spec.SchedulingGates[0].Name)
	case state.IsOwnedBy(pod, "DaemonSet"):
		return "a DaemonSet pod: its DaemonSet places it on every node that matches; karp counts it as node overhead"
	case state.IsAwaitingScheduler(pod):
		return "the kube-scheduler has not tried the pod yet; karp waits for its verdict"
	case !state.IsProvisionable(pod):
		if pod.Status.NominatedNodeName != "" {
			return "the kube-scheduler nominated node " + pod.Status.NominatedNodeName + " for the pod (preemption)"
		}
		return "the pod is not marked unschedulable by the kube-scheduler"
	}
	return ""
}

// placePod fills r from the plan's decision about pod and reports whether
// the plan decided about it.
func (e *Engine) placePod(r *PodReport, pod *corev1.Pod, plan *provisioning.Plan) bool {
	res := plan.Result
	for _, pl := range res.Order {
		if pl.Pod.UID == pod.UID && pl.Relaxed {
			r.PreferencesRelaxed = true
			defer func() { r.Message += " (only once one of its preferences is relaxed)" }()
		}
	}
	for _, ep := range res.ExistingNodes {
		for _, p := range ep.Pods {
			if p.UID != pod.UID {
				continue
			}
			sn := plan.NodeOf(ep.Node)
			r.Target = targetOf(sn, ep.Node)
			if ep.Node.Initialized {
				r.Decision = DecisionExistingNode
				r.Message = "node " + ep.Node.Name + " has room; the kube-scheduler should bind the pod there"
			} else {
				r.Decision = DecisionLaunching
				r.Message = "NodeClaim " + r.Target.NodeClaim + " is launching and will hold the pod"
			}
			return true
		}
	}
	for _, nc := range res.NodeClaims {
		for _, p := range nc.Pods {
			if p.UID != pod.UID {
				continue
			}
			r.Decision = DecisionNewNodeClaim
			r.Target = &Target{NodePool: nc.NodePool.Name, InstanceType: nc.InstanceType.Name, PricePerHour: nc.Price}
			if nc.Offering != nil {
				r.Target.Zone, r.Target.CapacityType = nc.Offering.Zone, nc.Offering.CapacityType
			}
			r.Message = fmt.Sprintf("karp would launch a %s (%s) in NodePool %s for the pod", nc.InstanceType.Name,
				formatPrice(nc.Price), nc.NodePool.Name)
			return true
		}
	}
	for _, pe := range append(append([]simulation.PodError(nil), res.PodErrors...), plan.Ignored...) {
		if pe.Pod.UID != pod.UID {
			continue
		}
		r.Decision = DecisionUnschedulable
		if pe.Status != nil {
			r.Code = pe.Status.Code.String()
			r.Reasons = append(r.Reasons, pe.Status.Reasons...)
		}
		r.Reasons = append(r.Reasons, skippedReasons(plan.Skipped)...)
		r.Message = "karp cannot place the pod: " + (&scheduling.Status{Reasons: r.Reasons}).Message()
		return true
	}
	return false
}

// skippedReasons are the NodePools the provisioner left out, as the
// FailedScheduling event names them.
func skippedReasons(skipped map[string]string) []scheduling.Reason {
	return scheduling.ParseReasons(provisioning.SkippedNote(skipped))
}

// targetOf describes an existing node or in-flight NodeClaim.
func targetOf(sn *state.StateNode, n *simulation.Node) *Target {
	t := &Target{Node: n.Name}
	if sn == nil {
		return t
	}
	if sn.Node == nil {
		t.Node = ""
	}
	if sn.NodeClaim != nil {
		t.NodeClaim = sn.NodeClaim.Name
	}
	labels := n.Labels
	t.NodePool, t.InstanceType = labels[karpv1.NodePoolLabelKey], labels[corev1.LabelInstanceTypeStable]
	t.Zone, t.CapacityType = labels[corev1.LabelTopologyZone], labels[karpv1.CapacityTypeLabelKey]
	return t
}

func formatPrice(p float64) string { return fmt.Sprintf("$%.4f/h", p) }
