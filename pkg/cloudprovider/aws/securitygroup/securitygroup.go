package securitygroup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/selector"
)

// CacheTTL is how long a NodeClass's security groups are reused before EC2
// is asked again (upstream's DefaultTTL).
const CacheTTL = time.Minute

// maxResults is the page size of each DescribeSecurityGroups call.
const maxResults = 500

// ec2API is the slice of the EC2 API the provider calls.
type ec2API interface {
	DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
}

// Provider lists the security groups of EC2NodeClasses. It is safe for
// concurrent use.
type Provider struct {
	ec2   ec2API
	cache *utilcache.LRUExpireCache
}

// NewProvider returns a provider caching on clk.
func NewProvider(api ec2API, clk clock.PassiveClock) *Provider {
	return &Provider{ec2: api, cache: utilcache.NewLRUExpireCacheWithClock(1000, clk)}
}

// List returns the security groups nodeClass selects, sorted by ID. An empty
// result with no error means the selectors matched nothing.
func (p *Provider) List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]ec2types.SecurityGroup, error) {
	key := fmt.Sprintf("%s-%d", nodeClass.UID, nodeClass.Generation)
	if cached, ok := p.cache.Get(key); ok {
		return slices.Clone(cached.([]ec2types.SecurityGroup)), nil
	}
	byID := map[string]ec2types.SecurityGroup{}
	for _, in := range Queries(nodeClass.Spec.SecurityGroupSelectorTerms) {
		pages := ec2.NewDescribeSecurityGroupsPaginator(p.ec2, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describing security groups: %w", err)
			}
			for _, g := range out.SecurityGroups {
				byID[aws.ToString(g.GroupId)] = g
			}
		}
	}
	groups := make([]ec2types.SecurityGroup, 0, len(byID))
	for _, g := range byID {
		groups = append(groups, g)
	}
	slices.SortFunc(groups, func(a, b ec2types.SecurityGroup) int {
		return strings.Compare(aws.ToString(a.GroupId), aws.ToString(b.GroupId))
	})
	p.cache.Add(key, groups, CacheTTL)
	return slices.Clone(groups), nil
}

// Queries builds the DescribeSecurityGroups requests for terms: one for all
// id terms, one for all name terms, one per tags term. IDs and names are
// filters rather than GroupIds/GroupNames, so an unknown one matches nothing
// instead of failing the whole request.
func Queries(terms []awsv1.SecurityGroupSelectorTerm) []*ec2.DescribeSecurityGroupsInput {
	var ids, names []string
	var tagged []*ec2.DescribeSecurityGroupsInput
	for _, term := range terms {
		switch {
		case term.ID != "":
			ids = append(ids, term.ID)
		case term.Name != "":
			names = append(names, term.Name)
		case len(term.Tags) > 0:
			tagged = append(tagged, &ec2.DescribeSecurityGroupsInput{Filters: selector.TagFilters(term.Tags), MaxResults: aws.Int32(maxResults)})
		}
	}
	var out []*ec2.DescribeSecurityGroupsInput
	if len(ids) > 0 {
		out = append(out, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("group-id"), Values: ids}}, MaxResults: aws.Int32(maxResults)})
	}
	if len(names) > 0 {
		out = append(out, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: names}}, MaxResults: aws.Int32(maxResults)})
	}
	return append(out, tagged...)
}

// Status converts groups into the EC2NodeClass status form, sorted by ID.
func Status(groups []ec2types.SecurityGroup) []awsv1.SecurityGroup {
	out := make([]awsv1.SecurityGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, awsv1.SecurityGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName)})
	}
	slices.SortFunc(out, func(a, b awsv1.SecurityGroup) int { return strings.Compare(a.ID, b.ID) })
	return out
}
