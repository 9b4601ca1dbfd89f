package test

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
)

// KWOKNodeClassWrapper builds a KWOKNodeClass: MakeKWOKNodeClass("default").Obj().
type KWOKNodeClassWrapper struct{ kwokv1alpha1.KWOKNodeClass }

// MakeKWOKNodeClass returns an empty KWOKNodeClass (no registration delay,
// no conditions).
func MakeKWOKNodeClass(name string) *KWOKNodeClassWrapper {
	return &KWOKNodeClassWrapper{kwokv1alpha1.KWOKNodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: kwokv1alpha1.SchemeGroupVersion.String(), Kind: kwokv1alpha1.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}}
}

// Obj returns a deep copy of the built KWOKNodeClass.
func (w *KWOKNodeClassWrapper) Obj() *kwokv1alpha1.KWOKNodeClass { return w.KWOKNodeClass.DeepCopy() }

// NodeRegistrationDelay sets spec.nodeRegistrationDelay.
func (w *KWOKNodeClassWrapper) NodeRegistrationDelay(d time.Duration) *KWOKNodeClassWrapper {
	w.Spec.NodeRegistrationDelay = &metav1.Duration{Duration: d}
	return w
}

// Ready sets the Ready condition True (ready) or False, stamped at the given time.
func (w *KWOKNodeClassWrapper) Ready(ready bool, at time.Time) *KWOKNodeClassWrapper {
	status := metav1.ConditionFalse
	reason := "NotReady"
	if ready {
		status, reason = metav1.ConditionTrue, kwokv1alpha1.ConditionTypeReady
	}
	setCondition(w.StatusConditions(), kwokv1alpha1.ConditionTypeReady, status, reason, at)
	return w
}
