package manifest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
)

// systemPriorityClasses are the PriorityClasses every cluster has.
var systemPriorityClasses = map[string]int32{
	"system-cluster-critical": 2000000000,
	"system-node-critical":    2000001000,
}

// priorities resolves pod priority like the Priority admission plugin:
// spec.priorityClassName names the class, else the globalDefault class
// (the highest-valued one if several claim it), else 0.
type priorities struct {
	byName map[string]*schedulingv1.PriorityClass
	def    *schedulingv1.PriorityClass
}

func newPriorities(classes []*schedulingv1.PriorityClass) *priorities {
	p := &priorities{byName: map[string]*schedulingv1.PriorityClass{}}
	for _, pc := range classes {
		p.byName[pc.Name] = pc
		if pc.GlobalDefault && (p.def == nil || pc.Value > p.def.Value) {
			p.def = pc
		}
	}
	return p
}

// apply sets spec.priority (and the class's preemption policy) unless the
// pod already has a priority. It returns a warning for an unknown class.
func (p *priorities) apply(pod *corev1.Pod) string {
	if pod.Spec.Priority != nil {
		return ""
	}
	name := pod.Spec.PriorityClassName
	var value int32
	var policy *corev1.PreemptionPolicy
	switch pc, ok := p.byName[name]; {
	case name == "" && p.def != nil:
		pod.Spec.PriorityClassName = p.def.Name
		value, policy = p.def.Value, p.def.PreemptionPolicy
	case name == "":
	case ok:
		value, policy = pc.Value, pc.PreemptionPolicy
	default:
		v, system := systemPriorityClasses[name]
		if !system {
			pod.Spec.Priority = &value
			return fmt.Sprintf("Pod %s/%s: PriorityClass %q is not among the manifests; priority 0 assumed", pod.Namespace, pod.Name, name)
		}
		value = v
	}
	pod.Spec.Priority = &value
	if pod.Spec.PreemptionPolicy == nil && policy != nil {
		pp := *policy
		pod.Spec.PreemptionPolicy = &pp
	}
	return ""
}
