// Package awsfence keeps a karp replica that may have lost its
// leader-election Lease from changing anything in AWS.
//
// The write fence (pkg/operator/fence) refuses a lapsed replica's writes to
// the API server, and its cloud provider's launches and terminations. The
// AWS provider's own loops make other AWS writes: deleting launch templates
// and instance profiles it takes for orphans, tagging instances, receiving
// and deleting interruption messages. A replica resumed past its Lease
// would make them from a stale view next to the new leader; receiving a
// message alone hides it from the new leader for its visibility timeout.
// APIOption refuses every such call while the fence does not hold.
package awsfence

import (
	"context"
	"strings"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
)

// Fence is what the option asks before a call that changes something:
// nil to let it through, else the error to fail the call with.
// *fence.Fence is one.
type Fence interface {
	Check(what string) error
}

// APIOption returns an option for aws.Config.APIOptions that fails, before
// anything is sent, every call of an SDK client built from the config that
// is not read-only while f refuses. The error wraps f's.
func APIOption(f Fence) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("KarpLeaderFence",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				service, operation := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
				if !ReadOnly(operation) {
					if err := f.Check(service + " " + operation); err != nil {
						return middleware.InitializeOutput{}, middleware.Metadata{}, err
					}
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	}
}

// ReadOnly reports whether an AWS operation only reads: its name starts
// with Describe, Get or List (EC2, SSM, IAM, Pricing, EKS, STS, and SQS's
// GetQueueUrl and GetQueueAttributes). Everything else counts as a write,
// SQS's ReceiveMessage included: it hides the messages it returns. An
// empty name (no operation known) counts as a write.
func ReadOnly(operation string) bool {
	for _, prefix := range []string{"Describe", "Get", "List"} {
		if strings.HasPrefix(operation, prefix) {
			return true
		}
	}
	return false
}
