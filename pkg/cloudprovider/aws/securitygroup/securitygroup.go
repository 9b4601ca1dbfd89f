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

// Resolution is what a NodeClass's security group selector terms
// resolved to: the groups selected, sorted by ID, and the terms that
// matched none.
type Resolution = selector.Resolution[ec2types.SecurityGroup]

// List returns the security groups nodeClass selects, sorted by ID. An empty
// result with no error means the selectors matched nothing.
func (p *Provider) List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]ec2types.SecurityGroup, error) {
	r, err := p.Resolve(ctx, nodeClass)
	return r.Selected, err
}

// Resolve returns the security groups nodeClass selects and which of its
// terms matched none.
func (p *Provider) Resolve(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (Resolution, error) {
	key := fmt.Sprintf("%s-%d", nodeClass.UID, nodeClass.Generation)
	if cached, ok := p.cache.Get(key); ok {
		return cached.(Resolution).Clone(), nil
	}
	terms := nodeClass.Spec.SecurityGroupSelectorTerms
	var queries []selector.Query[ec2types.SecurityGroup]
	for _, q := range queryTerms(terms) {
		queries = append(queries, selector.Query[ec2types.SecurityGroup]{
			Terms: q.terms,
			List: func(ctx context.Context) ([]ec2types.SecurityGroup, error) {
				var found []ec2types.SecurityGroup
				for pages := ec2.NewDescribeSecurityGroupsPaginator(p.ec2, q.in); pages.HasMorePages(); {
					out, err := pages.NextPage(ctx)
					if err != nil {
						return nil, fmt.Errorf("describing security groups: %w", err)
					}
					found = append(found, out.SecurityGroups...)
				}
				return found, nil
			},
			Answers: func(i int, g ec2types.SecurityGroup) bool { return q.answers(terms[i], g) },
		})
	}
	r, err := selector.Resolve(ctx, queries, func(g ec2types.SecurityGroup) string { return aws.ToString(g.GroupId) })
	if err != nil {
		return Resolution{}, err
	}
	p.cache.Add(key, r, CacheTTL)
	return r.Clone(), nil
}

// query is one DescribeSecurityGroups request and the indices of the terms
// it answers: all id terms, all name terms, or one tags term.
type query struct {
	in    *ec2.DescribeSecurityGroupsInput
	terms []int
	field string
}

// answers reports whether g is an answer to term in this query.
func (q query) answers(term awsv1.SecurityGroupSelectorTerm, g ec2types.SecurityGroup) bool {
	switch q.field {
	case "group-id":
		return selector.Match(term.ID, aws.ToString(g.GroupId))
	case "group-name":
		return selector.Match(term.Name, aws.ToString(g.GroupName))
	}
	return true
}

// Queries builds the DescribeSecurityGroups requests for terms: one for all
// id terms, one for all name terms, one per tags term. IDs and names are
// filters rather than GroupIds/GroupNames, so an unknown one matches nothing
// instead of failing the whole request.
func Queries(terms []awsv1.SecurityGroupSelectorTerm) []*ec2.DescribeSecurityGroupsInput {
	var out []*ec2.DescribeSecurityGroupsInput
	for _, q := range queryTerms(terms) {
		out = append(out, q.in)
	}
	return out
}

func queryTerms(terms []awsv1.SecurityGroupSelectorTerm) []query {
	ids := query{field: "group-id"}
	names := query{field: "group-name"}
	var idValues, nameValues []string
	var tagged []query
	for i, term := range terms {
		switch {
		case term.ID != "":
			idValues = append(idValues, term.ID)
			ids.terms = append(ids.terms, i)
		case term.Name != "":
			nameValues = append(nameValues, term.Name)
			names.terms = append(names.terms, i)
		case len(term.Tags) > 0:
			tagged = append(tagged, query{in: &ec2.DescribeSecurityGroupsInput{Filters: selector.TagFilters(term.Tags), MaxResults: aws.Int32(maxResults)}, terms: []int{i}})
		}
	}
	var out []query
	if len(idValues) > 0 {
		ids.in = &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String(ids.field), Values: idValues}}, MaxResults: aws.Int32(maxResults)}
		out = append(out, ids)
	}
	if len(nameValues) > 0 {
		names.in = &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String(names.field), Values: nameValues}}, MaxResults: aws.Int32(maxResults)}
		out = append(out, names)
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
