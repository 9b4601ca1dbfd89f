package cloudprovider

import (
	"errors"
	"fmt"
	"strings"
)

// NodeClaimNotFoundError says the instance behind a NodeClaim does not exist
// (never launched, or terminated).
type NodeClaimNotFoundError struct{ err error }

// NewNodeClaimNotFoundError wraps err as a NodeClaimNotFoundError.
func NewNodeClaimNotFoundError(err error) error { return &NodeClaimNotFoundError{err: err} }

func (e *NodeClaimNotFoundError) Error() string { return "nodeclaim not found: " + errString(e.err) }

func (e *NodeClaimNotFoundError) Unwrap() error { return e.err }

// IsNodeClaimNotFoundError reports whether err is or wraps a NodeClaimNotFoundError.
func IsNodeClaimNotFoundError(err error) bool {
	var target *NodeClaimNotFoundError
	return errors.As(err, &target)
}

// IgnoreNodeClaimNotFoundError returns nil for a NodeClaimNotFoundError, err otherwise.
func IgnoreNodeClaimNotFoundError(err error) error {
	if IsNodeClaimNotFoundError(err) {
		return nil
	}
	return err
}

// InsufficientCapacityError says no offering the NodeClaim allows could be
// launched. Offerings, when known, lists what the provider tried and was
// refused, so callers can avoid them.
type InsufficientCapacityError struct {
	err       error
	Offerings []OfferingKey
}

// NewInsufficientCapacityError wraps err as an InsufficientCapacityError for
// the refused offerings (none when the request matched no offering at all).
func NewInsufficientCapacityError(err error, refused ...OfferingKey) error {
	return &InsufficientCapacityError{err: err, Offerings: refused}
}

func (e *InsufficientCapacityError) Error() string {
	msg := "insufficient capacity: " + errString(e.err)
	if len(e.Offerings) > 0 {
		names := make([]string, len(e.Offerings))
		for i, k := range e.Offerings {
			names[i] = k.String()
		}
		msg += " (refused " + strings.Join(names, ", ") + ")"
	}
	return msg
}

func (e *InsufficientCapacityError) Unwrap() error { return e.err }

// IsInsufficientCapacityError reports whether err is or wraps an InsufficientCapacityError.
func IsInsufficientCapacityError(err error) bool {
	var target *InsufficientCapacityError
	return errors.As(err, &target)
}

// IgnoreInsufficientCapacityError returns nil for an InsufficientCapacityError, err otherwise.
func IgnoreInsufficientCapacityError(err error) error {
	if IsInsufficientCapacityError(err) {
		return nil
	}
	return err
}

// NodeClassNotReadyError says the NodeClaim's NodeClass cannot be used yet
// (not Ready, or being deleted).
type NodeClassNotReadyError struct{ err error }

// NewNodeClassNotReadyError wraps err as a NodeClassNotReadyError.
func NewNodeClassNotReadyError(err error) error { return &NodeClassNotReadyError{err: err} }

func (e *NodeClassNotReadyError) Error() string { return "nodeclass not ready: " + errString(e.err) }

func (e *NodeClassNotReadyError) Unwrap() error { return e.err }

// IsNodeClassNotReadyError reports whether err is or wraps a NodeClassNotReadyError.
func IsNodeClassNotReadyError(err error) bool {
	var target *NodeClassNotReadyError
	return errors.As(err, &target)
}

// IgnoreNodeClassNotReadyError returns nil for a NodeClassNotReadyError, err otherwise.
func IgnoreNodeClassNotReadyError(err error) error {
	if IsNodeClassNotReadyError(err) {
		return nil
	}
	return err
}

// CreateError is a launch failure that names the reason and message the
// NodeClaim's Launched condition should carry.
type CreateError struct {
	err              error
	ConditionReason  string
	ConditionMessage string
}

// NewCreateError wraps err with the Launched condition reason and message.
func NewCreateError(err error, reason, message string) error {
	return &CreateError{err: err, ConditionReason: reason, ConditionMessage: message}
}

func (e *CreateError) Error() string {
	return fmt.Sprintf("creating instance (%s): %s", e.ConditionReason, errString(e.err))
}

func (e *CreateError) Unwrap() error { return e.err }

// AsCreateError returns the CreateError in err's chain, if any.
func AsCreateError(err error) (*CreateError, bool) {
	var target *CreateError
	ok := errors.As(err, &target)
	return target, ok
}

// IsCreateError reports whether err is or wraps a CreateError.
func IsCreateError(err error) bool {
	_, ok := AsCreateError(err)
	return ok
}

// IgnoreCreateError returns nil for a CreateError, err otherwise.
func IgnoreCreateError(err error) error {
	if IsCreateError(err) {
		return nil
	}
	return err
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// UnevaluatedNodePoolError says the NodePool's instance types cannot be
// given yet: the NodeOverlays that apply to them have not been evaluated
// since they changed (or since start). Callers wait rather than decide on
// stale prices or capacity.
type UnevaluatedNodePoolError struct {
	NodePool string
	reason   string
}

// NewUnevaluatedNodePoolError says the NodePool waits for the NodeOverlay
// evaluation, and why.
func NewUnevaluatedNodePoolError(nodePool, reason string) error {
	return &UnevaluatedNodePoolError{NodePool: nodePool, reason: reason}
}

func (e *UnevaluatedNodePoolError) Error() string {
	return fmt.Sprintf("nodepool %s not evaluated against the nodeoverlays yet: %s", e.NodePool, e.reason)
}

// IsUnevaluatedNodePoolError reports whether err is or wraps an UnevaluatedNodePoolError.
func IsUnevaluatedNodePoolError(err error) bool {
	var target *UnevaluatedNodePoolError
	return errors.As(err, &target)
}
