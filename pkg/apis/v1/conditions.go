package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// ConditionSet reads and writes the status conditions of one object. It
// keeps the root condition (Ready) consistent with its dependents after
// every change: True when every dependent is True, False when any is False,
// Unknown otherwise. Conditions that are not dependents are informational
// and never affect the root.
//
// Writes stamp ObservedGeneration with the object's generation and move
// LastTransitionTime only when the status flips. The time comes from the
// clock given by WithClock (the real clock by default).
//
// +kubebuilder:object:generate=false
type ConditionSet struct {
	conditions *[]metav1.Condition
	generation int64
	root       string
	dependents []string
	clock      clock.PassiveClock
}

// NewConditionSet returns a ConditionSet over conditions whose root condition
// is derived from the dependents. With no dependents the root is set directly.
// Provider NodeClasses use it for their own status conditions.
func NewConditionSet(conditions *[]metav1.Condition, generation int64, root string, dependents ...string) ConditionSet {
	return ConditionSet{conditions: conditions, generation: generation, root: root, dependents: dependents, clock: clock.RealClock{}}
}

// WithClock returns a copy of the set that stamps transition times from clk.
func (c ConditionSet) WithClock(clk clock.PassiveClock) ConditionSet {
	c.clock = clk
	return c
}

// Root returns the root condition, or nil if it was never set.
func (c ConditionSet) Root() *metav1.Condition { return c.Get(c.root) }

// Get returns the condition of the given type, or nil.
func (c ConditionSet) Get(conditionType string) *metav1.Condition {
	for i := range *c.conditions {
		if (*c.conditions)[i].Type == conditionType {
			return &(*c.conditions)[i]
		}
	}
	return nil
}

// IsTrue reports whether every given condition type is present and True.
func (c ConditionSet) IsTrue(conditionTypes ...string) bool {
	for _, t := range conditionTypes {
		cond := c.Get(t)
		if cond == nil || cond.Status != metav1.ConditionTrue {
			return false
		}
	}
	return true
}

// IsFalse reports whether the condition is present and False.
func (c ConditionSet) IsFalse(conditionType string) bool {
	cond := c.Get(conditionType)
	return cond != nil && cond.Status == metav1.ConditionFalse
}

// IsUnknown reports whether the condition is missing or Unknown.
func (c ConditionSet) IsUnknown(conditionType string) bool {
	cond := c.Get(conditionType)
	return cond == nil || cond.Status == metav1.ConditionUnknown
}

// Initialize sets every missing dependent and the root to Unknown. It
// reports whether anything changed.
func (c ConditionSet) Initialize() bool {
	changed := false
	for _, t := range c.dependents {
		if c.Get(t) == nil {
			changed = c.set(t, metav1.ConditionUnknown, "AwaitingReconciliation", "object is awaiting reconciliation") || changed
		}
	}
	return c.updateRoot() || changed
}

// SetTrue marks the condition True with the condition type as reason.
func (c ConditionSet) SetTrue(conditionType string) bool {
	return c.SetTrueWithReason(conditionType, conditionType, "")
}

// SetTrueWithReason marks the condition True.
func (c ConditionSet) SetTrueWithReason(conditionType, reason, message string) bool {
	return c.setAndUpdateRoot(conditionType, metav1.ConditionTrue, reason, message)
}

// SetFalse marks the condition False.
func (c ConditionSet) SetFalse(conditionType, reason, message string) bool {
	return c.setAndUpdateRoot(conditionType, metav1.ConditionFalse, reason, message)
}

// SetUnknown marks the condition Unknown with a generic reason.
func (c ConditionSet) SetUnknown(conditionType string) bool {
	return c.SetUnknownWithReason(conditionType, "AwaitingReconciliation", "object is awaiting reconciliation")
}

// SetUnknownWithReason marks the condition Unknown.
func (c ConditionSet) SetUnknownWithReason(conditionType, reason, message string) bool {
	return c.setAndUpdateRoot(conditionType, metav1.ConditionUnknown, reason, message)
}

// Clear removes the condition. Clearing a dependent leaves the root Unknown
// unless another dependent is False.
func (c ConditionSet) Clear(conditionType string) bool {
	out := (*c.conditions)[:0]
	removed := false
	for _, cond := range *c.conditions {
		if cond.Type == conditionType {
			removed = true
			continue
		}
		out = append(out, cond)
	}
	*c.conditions = out
	if !removed {
		return false
	}
	c.updateRoot()
	return true
}

func (c ConditionSet) setAndUpdateRoot(conditionType string, status metav1.ConditionStatus, reason, message string) bool {
	changed := c.set(conditionType, status, reason, message)
	if conditionType == c.root {
		return changed
	}
	return c.updateRoot() || changed
}

// set writes one condition; the API server requires a non-empty reason.
func (c ConditionSet) set(conditionType string, status metav1.ConditionStatus, reason, message string) bool {
	if reason == "" {
		reason = conditionType
	}
	next := metav1.Condition{
		Type:               conditionType,
		Status:             status,
		ObservedGeneration: c.generation,
		Reason:             reason,
		Message:            message,
		LastTransitionTime: metav1.NewTime(c.clock.Now().Truncate(time.Second)),
	}
	existing := c.Get(conditionType)
	if existing == nil {
		*c.conditions = append(*c.conditions, next)
		return true
	}
	if existing.Status == status {
		next.LastTransitionTime = existing.LastTransitionTime
	}
	if *existing == next {
		return false
	}
	*existing = next
	return true
}

// updateRoot derives the root condition from the dependents.
func (c ConditionSet) updateRoot() bool {
	if len(c.dependents) == 0 {
		return false
	}
	for _, t := range c.dependents {
		if cond := c.Get(t); cond != nil && cond.Status == metav1.ConditionFalse {
			return c.set(c.root, metav1.ConditionFalse, cond.Reason, cond.Message)
		}
	}
	for _, t := range c.dependents {
		if cond := c.Get(t); cond == nil || cond.Status != metav1.ConditionTrue {
			return c.set(c.root, metav1.ConditionUnknown, "UnhealthyDependents", t+" is not True")
		}
	}
	return c.set(c.root, metav1.ConditionTrue, c.root, "")
}
