package scheduling

import "strings"

// Code says how a scheduling attempt ended, in the kube-scheduler sense.
type Code int

const (
	// Success means the pod was placed.
	Success Code = iota
	// Unschedulable means the pod does not fit now but could once the
	// cluster changes (limits freed, topology rebalanced, pods placed).
	Unschedulable
	// UnschedulableAndUnresolvable means the pod cannot fit in any NodePool
	// as configured (taints, requirements, no large enough instance type);
	// only a configuration change helps.
	UnschedulableAndUnresolvable
	// Error means the solver itself failed (bad input); it is not a fit result.
	Error
)

// String names the code.
func (c Code) String() string {
	switch c {
	case Success:
		return "Success"
	case Unschedulable:
		return "Unschedulable"
	case UnschedulableAndUnresolvable:
		return "UnschedulableAndUnresolvable"
	}
	return "Error"
}

// Status is the outcome of trying to place a pod: a code and human-readable
// reasons, one per NodePool (or node) tried, stable for the same input.
type Status struct {
	Code    Code
	Reasons []string
}

// IsSuccess reports whether the pod was placed.
func (s *Status) IsSuccess() bool { return s == nil || s.Code == Success }

// Message joins the reasons with "; ".
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.Reasons, "; ")
}

// NewStatus builds a status.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{Code: code, Reasons: reasons}
}
