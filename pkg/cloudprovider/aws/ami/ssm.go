package ami

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
)

const (
	// AliasParameterTTL is how long an alias's SSM parameter is reused.
	// AWS publishes a new release at most every few days; a pinned release
	// never changes.
	AliasParameterTTL = 24 * time.Hour
	// CustomParameterTTL is how long an ssmParameter term's value is reused:
	// users may update their own parameters at any time.
	CustomParameterTTL = 5 * time.Minute
)

// ssmAPI is the slice of the SSM API the provider calls.
type ssmAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// errParameterNotFound is a parameter SSM does not have.
var errParameterNotFound = errors.New("ssm parameter not found")

// parameters reads SSM parameters through a cache keyed by name.
type parameters struct {
	ssm   ssmAPI
	cache *utilcache.LRUExpireCache
}

func newParameters(api ssmAPI, clk clock.PassiveClock) *parameters {
	return &parameters{ssm: api, cache: utilcache.NewLRUExpireCacheWithClock(10000, clk)}
}

// get returns the parameter's value, caching it for ttl. A missing
// parameter is errParameterNotFound (not cached).
func (p *parameters) get(ctx context.Context, name string, ttl time.Duration) (string, error) {
	if v, ok := p.cache.Get(name); ok {
		return v.(string), nil
	}
	out, err := p.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		if apiErr, ok := errors.AsType[smithy.APIError](err); ok && apiErr.ErrorCode() == "ParameterNotFound" {
			return "", fmt.Errorf("%w: %s", errParameterNotFound, name)
		}
		return "", fmt.Errorf("getting ssm parameter %s: %w", name, err)
	}
	value := aws.ToString(out.Parameter.Value)
	p.cache.Add(name, value, ttl)
	return value, nil
}

// forget drops a cached parameter, so the next get asks SSM.
func (p *parameters) forget(name string) { p.cache.Remove(name) }
