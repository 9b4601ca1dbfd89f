package metrics

import (
	"context"
)

type controllerKey struct{}

// WithController records which controller makes the cloud provider calls
// under ctx, for the controller label of the cloud provider metrics.
func WithController(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, controllerKey{}, name)
}

// ControllerFrom is the controller WithController recorded under ctx, or "".
func ControllerFrom(ctx context.Context) string {
	name, _ := ctx.Value(controllerKey{}).(string)
	return name
}

// Error kinds of CloudProviderErrorsTotal's error label.
const (
	ErrorNodeClaimNotFound    = "NodeClaimNotFoundError"
	ErrorInsufficientCapacity = "InsufficientCapacityError"
	ErrorNodeClassNotReady    = "NodeClassNotReadyError"
	ErrorCreate               = "CreateError"
	ErrorUnknown              = "UnknownError"
)
