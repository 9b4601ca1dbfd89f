package placementgroup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// codeUnknown is EC2's error for a placement group name or ID that does
// not exist.
const codeUnknown = "InvalidPlacementGroup.Unknown"

// CacheTTL is how long a selector's answer is reused before EC2 is asked
// again (upstream's placement group cache TTL).
const CacheTTL = time.Minute

// ec2API is the EC2 call the provider makes.
type ec2API interface {
	DescribePlacementGroups(ctx context.Context, in *ec2.DescribePlacementGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error)
}

// Provider resolves placement group selectors. It is safe for concurrent
// use.
type Provider struct {
	ec2   ec2API
	cache *utilcache.LRUExpireCache
}

// NewProvider returns a provider caching on clk.
func NewProvider(api ec2API, clk clock.PassiveClock) *Provider {
	return &Provider{ec2: api, cache: utilcache.NewLRUExpireCacheWithClock(1000, clk)}
}

// cached is one selector's answer; group is nil when none matched.
type cached struct {
	group *awsv1.PlacementGroup
}

// Resolve returns the placement group nodeClass selects: nil with no error
// when the class has no selector or no available group matches it.
func (p *Provider) Resolve(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (*awsv1.PlacementGroup, error) {
	sel := nodeClass.Spec.PlacementGroupSelector
	if sel == nil {
		return nil, nil
	}
	in := Query(sel)
	key := fmt.Sprintf("ids=%v names=%v", in.GroupIds, in.GroupNames)
	if hit, ok := p.cache.Get(key); ok {
		return copyOf(hit.(cached).group), nil
	}
	out, err := p.ec2.DescribePlacementGroups(ctx, in)
	var group *awsv1.PlacementGroup
	switch {
	case errorCode(err) == codeUnknown:
		// EC2 answers a name or ID it never had with an error where a
		// deleted group is merely filtered out: both are not found.
	case err != nil:
		return nil, fmt.Errorf("describing placement groups: %w", err)
	case len(out.PlacementGroups) > 0:
		group = FromEC2(out.PlacementGroups[0])
	}
	p.cache.Add(key, cached{group: group}, CacheTTL)
	return copyOf(group), nil
}

// Query is the DescribePlacementGroups request for a selector (upstream's):
// available groups only, by ID when the selector has one, else by name.
func Query(sel *awsv1.PlacementGroupSelector) *ec2.DescribePlacementGroupsInput {
	in := &ec2.DescribePlacementGroupsInput{
		Filters: []ec2types.Filter{{Name: aws.String("state"), Values: []string{string(ec2types.PlacementGroupStateAvailable)}}},
	}
	if id := aws.ToString(sel.ID); id != "" {
		in.GroupIds = []string{id}
	} else if name := aws.ToString(sel.Name); name != "" {
		in.GroupNames = []string{name}
	}
	return in
}

// FromEC2 converts an EC2 placement group to its status form.
func FromEC2(pg ec2types.PlacementGroup) *awsv1.PlacementGroup {
	return &awsv1.PlacementGroup{
		ID:             aws.ToString(pg.GroupId),
		Name:           aws.ToString(pg.GroupName),
		Strategy:       awsv1.PlacementGroupStrategy(pg.Strategy),
		PartitionCount: aws.ToInt32(pg.PartitionCount),
		SpreadLevel:    string(pg.SpreadLevel),
	}
}

func copyOf(pg *awsv1.PlacementGroup) *awsv1.PlacementGroup {
	if pg == nil {
		return nil
	}
	out := *pg
	return &out
}

func errorCode(err error) string {
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		return apiErr.ErrorCode()
	}
	return ""
}
