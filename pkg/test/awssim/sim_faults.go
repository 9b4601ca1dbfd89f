package awssim

import (
	"context"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// outage is a switch that makes a whole service fail.
type outage struct{ down atomic.Bool }

// SetSSMOutage makes every SSM call fail with SSM's InternalServerError (a
// 5xx the SDK retries, then gives up on) until it is called with false.
func (s *Sim) SetSSMOutage(down bool) { s.ssmDown.down.Store(down) }

// ssmBackend is the SSM the Sim serves: the fake, unless SSM is down.
type ssmBackend struct {
	*fake.SSM
	outage *outage
}

func (b *ssmBackend) unavailable() error {
	return &ssmtypes.InternalServerError{Message: aws.String("The SSM service is unavailable (simulated outage).")}
}

// GetParameter is the fake's, or InternalServerError during an outage.
func (b *ssmBackend) GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	if b.outage.down.Load() {
		return nil, b.unavailable()
	}
	return b.SSM.GetParameter(ctx, in, opts...)
}

// GetParameters is the fake's, or InternalServerError during an outage.
func (b *ssmBackend) GetParameters(ctx context.Context, in *ssm.GetParametersInput, opts ...func(*ssm.Options)) (*ssm.GetParametersOutput, error) {
	if b.outage.down.Load() {
		return nil, b.unavailable()
	}
	return b.SSM.GetParameters(ctx, in, opts...)
}
