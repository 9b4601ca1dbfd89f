package simulation

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// daemon is a DaemonSet's pod as it would land on new nodes.
type daemon struct {
	uid         types.UID
	name        string
	namespace   string
	requests    scheduling.Vector
	tolerations []corev1.Toleration
	terms       []scheduling.Requirements // ORed; each is nodeSelector ∩ one required term
	ports       []scheduling.HostPort
}

// daemonSetTolerations are added to every DaemonSet pod by the DaemonSet
// controller, so node conditions never keep daemons off a node.
var daemonSetTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

// daemonPodRequests gives a DaemonSet's pod requests the way the API server
// would store them: LimitRange defaults applied, limits-as-requests for
// containers that only set limits (upstream karpenter counts such pods as
// zero and launches nodes too small: its issues 715/1573/3199).
func daemonPod(ds *appsv1.DaemonSet, limitRanges []corev1.LimitRange) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: ds.Spec.Template.Spec}
	pod.Namespace = ds.Namespace
	return scheduling.WithLimitRangeDefaults(pod, limitRanges)
}

func (s *solver) newDaemon(ds *appsv1.DaemonSet, limitRanges []corev1.LimitRange) *daemon {
	pod := daemonPod(ds, limitRanges)
	d := &daemon{uid: ds.UID, name: ds.Name, namespace: ds.Namespace,
		requests: s.resources.Vector(scheduling.PodRequests(pod)), ports: scheduling.PodHostPorts(pod)}
	d.tolerations = append(append([]corev1.Toleration(nil), pod.Spec.Tolerations...), daemonSetTolerations...)
	base := scheduling.NewLabelRequirements(pod.Spec.NodeSelector)
	var terms []corev1.NodeSelectorTerm
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		terms = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	if len(terms) == 0 {
		d.terms = []scheduling.Requirements{base}
	}
	for _, term := range terms {
		d.terms = append(d.terms, base.Intersection(termRequirements(term)))
	}
	return d
}

// landsOn reports whether the daemon pod would schedule on a new node whose
// labels satisfy nodeReqs (taints are checked per pool). Some ORed term must
// be compatible: keys the node leaves open count as landing only when
// well-known (the label will exist with some value).
func (d *daemon) landsOn(nodeReqs scheduling.Requirements, wellKnown sets.Set[string]) bool {
	for _, term := range d.terms {
		if nodeReqs.Compatible(term, wellKnown) == nil {
			return true
		}
	}
	return false
}

// landsOnNode reports whether the daemon pod would schedule on an existing node.
func (d *daemon) landsOnNode(nodeReqs scheduling.Requirements, taints scheduling.Taints) bool {
	if taints.ToleratesPod(d.tolerations) != nil {
		return false
	}
	for _, term := range d.terms {
		if nodeReqs.StrictlyCompatible(term) == nil {
			return true
		}
	}
	return false
}

// ownedBy reports whether pod is this DaemonSet's pod.
func (d *daemon) ownedBy(pod *corev1.Pod) bool {
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "DaemonSet" && (ref.UID == d.uid && d.uid != "" || ref.Name == d.name && pod.Namespace == d.namespace) {
			return true
		}
	}
	return false
}
