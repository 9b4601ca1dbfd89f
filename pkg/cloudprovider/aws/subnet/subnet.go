package subnet

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/selector"
)

// DefaultRefreshInterval is how long a NodeClass's subnets are reused
// before EC2 is asked again (upstream's --subnet-refresh-interval default).
const DefaultRefreshInterval = time.Minute

// maxResults is the page size of each DescribeSubnets call.
const maxResults = 500

// ec2API is the slice of the EC2 API the provider calls.
type ec2API interface {
	DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
}

// Provider lists the subnets of EC2NodeClasses. It is safe for concurrent use.
type Provider struct {
	ec2     ec2API
	clock   clock.PassiveClock
	refresh time.Duration
	cache   *utilcache.LRUExpireCache

	mu           sync.Mutex
	availableIPs map[string]availableIPs
	// inflight is the addresses launches are predicted to have taken from
	// each subnet since its last listing (ZonalSubnetsForLaunch).
	inflight map[string]int32
}

type availableIPs struct {
	count int32
	at    time.Time
}

// NewProvider returns a provider whose answers live for refresh (at least
// one minute, as upstream enforces).
func NewProvider(api ec2API, clk clock.PassiveClock, refresh time.Duration) *Provider {
	return &Provider{
		ec2:          api,
		clock:        clk,
		refresh:      max(refresh, time.Minute),
		cache:        utilcache.NewLRUExpireCacheWithClock(1000, clk),
		availableIPs: map[string]availableIPs{},
		inflight:     map[string]int32{},
	}
}

// Resolution is what a NodeClass's subnet selector terms resolved to:
// the subnets selected, sorted by ID, and the terms that matched none.
type Resolution = selector.Resolution[ec2types.Subnet]

// List returns the subnets nodeClass selects, sorted by ID. An empty result
// with no error means the selectors matched nothing.
func (p *Provider) List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]ec2types.Subnet, error) {
	r, err := p.Resolve(ctx, nodeClass)
	return r.Selected, err
}

// Resolve returns the subnets nodeClass selects and which of its terms
// matched none (a mistyped ID next to a working tag term, say).
func (p *Provider) Resolve(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (Resolution, error) {
	key := fmt.Sprintf("%s-%d", nodeClass.UID, nodeClass.Generation)
	if cached, ok := p.cache.Get(key); ok {
		return cached.(Resolution).Clone(), nil
	}
	terms := nodeClass.Spec.SubnetSelectorTerms
	var queries []selector.Query[ec2types.Subnet]
	for _, q := range queryTerms(terms) {
		queries = append(queries, selector.Query[ec2types.Subnet]{
			Terms: q.terms,
			List: func(ctx context.Context) ([]ec2types.Subnet, error) {
				var found []ec2types.Subnet
				for pages := ec2.NewDescribeSubnetsPaginator(p.ec2, q.in); pages.HasMorePages(); {
					out, err := pages.NextPage(ctx)
					if err != nil {
						return nil, fmt.Errorf("describing subnets: %w", err)
					}
					found = append(found, out.Subnets...)
				}
				return found, nil
			},
			Answers: func(i int, s ec2types.Subnet) bool {
				return !q.byID || selector.Match(terms[i].ID, aws.ToString(s.SubnetId))
			},
		})
	}
	r, err := selector.Resolve(ctx, queries, func(s ec2types.Subnet) string { return aws.ToString(s.SubnetId) })
	if err != nil {
		return Resolution{}, err
	}
	p.cache.Add(key, r, p.refresh)
	p.recordAvailableIPs(r.Selected)
	return r.Clone(), nil
}

// AvailableIPs returns a subnet's available IP address count as last
// listed; ok is false when no listing within max(5m, refresh+4m) saw it.
func (p *Provider) AvailableIPs(subnetID string) (count int32, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen, ok := p.availableIPs[subnetID]
	if !ok || p.clock.Since(seen.at) > max(5*time.Minute, p.refresh+4*time.Minute) {
		return 0, false
	}
	return seen.count, true
}

func (p *Provider) recordAvailableIPs(subnets []ec2types.Subnet) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	ids := make([]string, 0, len(subnets))
	for _, s := range subnets {
		ids = append(ids, aws.ToString(s.SubnetId))
		p.availableIPs[aws.ToString(s.SubnetId)] = availableIPs{count: aws.ToInt32(s.AvailableIpAddressCount), at: now}
	}
	p.forgetInflight(ids)
}

// query is one DescribeSubnets request and the indices of the terms it
// answers. The id query answers every id term; a term matched when its ID
// is among the answers. A tags query answers its one term.
type query struct {
	in    *ec2.DescribeSubnetsInput
	terms []int
	byID  bool
}

// Queries builds the DescribeSubnets requests for terms: one for all id
// terms together, one per tags term.
func Queries(terms []awsv1.SubnetSelectorTerm) []*ec2.DescribeSubnetsInput {
	var out []*ec2.DescribeSubnetsInput
	for _, q := range queryTerms(terms) {
		out = append(out, q.in)
	}
	return out
}

func queryTerms(terms []awsv1.SubnetSelectorTerm) []query {
	byID := query{byID: true}
	var ids []string
	var out []query
	for i, term := range terms {
		if term.ID != "" {
			ids = append(ids, term.ID)
			byID.terms = append(byID.terms, i)
			continue
		}
		if len(term.Tags) > 0 {
			out = append(out, query{in: &ec2.DescribeSubnetsInput{Filters: selector.TagFilters(term.Tags), MaxResults: aws.Int32(maxResults)}, terms: []int{i}})
		}
	}
	if len(ids) > 0 {
		byID.in = &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("subnet-id"), Values: ids}}, MaxResults: aws.Int32(maxResults)}
		out = append([]query{byID}, out...)
	}
	return out
}

// Status converts subnets into the EC2NodeClass status form: most available
// IP addresses first, then by ID.
func Status(subnets []ec2types.Subnet) []awsv1.Subnet {
	sorted := slices.Clone(subnets)
	slices.SortFunc(sorted, func(a, b ec2types.Subnet) int {
		if c := cmp.Compare(aws.ToInt32(b.AvailableIpAddressCount), aws.ToInt32(a.AvailableIpAddressCount)); c != 0 {
			return c
		}
		return strings.Compare(aws.ToString(a.SubnetId), aws.ToString(b.SubnetId))
	})
	out := make([]awsv1.Subnet, 0, len(sorted))
	for _, s := range sorted {
		out = append(out, awsv1.Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)})
	}
	return out
}
