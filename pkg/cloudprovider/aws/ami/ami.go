package ami

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/selector"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/version"
)

// DefaultRefreshInterval is how long a NodeClass's resolved AMIs are reused
// (upstream's --ami-refresh-interval default).
const DefaultRefreshInterval = time.Minute

// imageTimeFormat is how EC2 writes CreationDate and DeprecationTime.
const imageTimeFormat = "2006-01-02T15:04:05.000Z"

// ec2API is the slice of the EC2 API the provider calls.
type ec2API interface {
	DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, opts ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
}

// versionSource tells the cluster's Kubernetes version as "major.minor".
type versionSource interface {
	Get(ctx context.Context) (string, error)
}

// Provider resolves EC2NodeClasses' AMIs. It is safe for concurrent use.
type Provider struct {
	ec2     ec2API
	params  *parameters
	version versionSource
	clock   clock.PassiveClock
	refresh time.Duration
	// aliasTTL is how long an alias's SSM parameters are reused.
	aliasTTL time.Duration
	cache    *utilcache.LRUExpireCache

	mu sync.Mutex
	// latest maps the SSM parameters of "latest" aliases to the AMI each
	// named when read, for InvalidateDeprecated.
	latest map[string]string
}

// NewProvider returns a provider whose answers live for refresh (at least a
// minute, as upstream enforces).
func NewProvider(ec2API ec2API, ssmAPI ssmAPI, versions versionSource, clk clock.PassiveClock, refresh time.Duration) *Provider {
	return &Provider{
		ec2:      ec2API,
		params:   newParameters(ssmAPI, clk),
		version:  versions,
		clock:    clk,
		refresh:  max(refresh, time.Minute),
		aliasTTL: AliasParameterTTL,
		cache:    utilcache.NewLRUExpireCacheWithClock(1000, clk),
		latest:   map[string]string{},
	}
}

// WithAliasParameterTTL makes the SSM parameters of aliases live for ttl
// (at least a minute) instead of AliasParameterTTL, so a release AWS
// publishes under the same parameter is read sooner. It returns p.
func (p *Provider) WithAliasParameterTTL(ttl time.Duration) *Provider {
	p.aliasTTL = max(ttl, time.Minute)
	return p
}

// Resolution is what a NodeClass's AMI selector terms resolved to.
type Resolution struct {
	// AMIs kept, one per requirement set, newest first.
	AMIs []AMI
	// Unmatched are the indices of the (non-alias) terms that matched no
	// image: an id not found, an ssmParameter missing or not naming a
	// found image, a tags/name/owner query with no answer.
	Unmatched []int
}

// List returns the AMIs nodeClass selects, one per requirement set, newest
// first. An empty result with no error means the selectors matched
// nothing. An alias the cluster's version cannot use is an
// *UnsupportedAliasError.
func (p *Provider) List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]AMI, error) {
	r, err := p.Resolve(ctx, nodeClass)
	return r.AMIs, err
}

// Resolve is List that also says which terms matched no image.
func (p *Provider) Resolve(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (Resolution, error) {
	key := fmt.Sprintf("%s-%d", nodeClass.UID, nodeClass.Generation)
	if cached, ok := p.cache.Get(key); ok {
		return cached.(Resolution).clone(), nil
	}
	var candidates []AMI
	var unmatched []int
	var err error
	if alias := nodeClass.Alias(); alias != nil {
		candidates, err = p.resolveAlias(ctx, *alias)
	} else {
		candidates, unmatched, err = p.resolveTerms(ctx, nodeClass.Spec.AMISelectorTerms)
	}
	if err != nil {
		return Resolution{}, err
	}
	r := Resolution{AMIs: Select(candidates), Unmatched: unmatched}
	p.cache.Add(key, r, p.refresh)
	return r.clone(), nil
}

func (r Resolution) clone() Resolution {
	return Resolution{AMIs: slices.Clone(r.AMIs), Unmatched: slices.Clone(r.Unmatched)}
}

// resolveAlias reads the alias's SSM parameters and describes the images
// they name. Parameters AWS does not publish (a variant missing for a
// release) are skipped; any other SSM failure fails the resolution, so the
// caller keeps what it resolved before rather than a partial set.
func (p *Provider) resolveAlias(ctx context.Context, alias awsv1.Alias) ([]AMI, error) {
	k8s, err := p.version.Get(ctx)
	if err != nil {
		return nil, err
	}
	minor, err := version.Minor(k8s)
	if err != nil {
		return nil, err
	}
	params, err := AliasParameters(alias, k8s, minor)
	if err != nil {
		return nil, err
	}
	variants := map[string][]Variant{}
	for _, param := range params {
		id, err := p.params.get(ctx, param.Path, p.aliasTTL)
		if errors.Is(err, errParameterNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("resolving alias %s: %w", alias, err)
		}
		variants[id] = append(variants[id], param.Variants...)
		if alias.Version == awsv1.AliasVersionLatest {
			p.rememberLatest(param.Path, id)
		}
	}
	if len(variants) == 0 {
		return nil, nil
	}
	images, err := p.describe(ctx, &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("image-id"), Values: slices.Sorted(maps.Keys(variants))}}})
	if err != nil {
		return nil, err
	}
	var out []AMI
	for _, img := range images {
		for _, v := range variants[aws.ToString(img.ImageId)] {
			out = append(out, p.candidate(img, variantRequirements(alias.Family, v)...))
		}
	}
	return out, nil
}

// resolveTerms reads ssmParameter terms and runs the terms' queries,
// noting the terms that matched no image.
func (p *Provider) resolveTerms(ctx context.Context, terms []awsv1.AMISelectorTerm) ([]AMI, []int, error) {
	// want is, per id and ssmParameter term, the image ID it names.
	want := map[int]string{}
	var ssmIDs []string
	for i, term := range terms {
		switch {
		case term.ID != "":
			want[i] = term.ID
		case term.SSMParameter != "":
			id, err := p.params.get(ctx, term.SSMParameter, CustomParameterTTL)
			if err != nil && !errors.Is(err, errParameterNotFound) {
				return nil, nil, err
			}
			if strings.HasPrefix(id, "ami-") {
				ssmIDs = append(ssmIDs, id)
				want[i] = id
			} else {
				want[i] = ""
			}
		}
	}
	var out []AMI
	var unmatched []int
	asked := map[int]bool{}
	for _, q := range queries(terms, ssmIDs) {
		images, err := p.describe(ctx, q.in)
		if err != nil {
			return nil, nil, err
		}
		for _, img := range images {
			out = append(out, p.candidate(img))
		}
		for _, i := range q.terms {
			asked[i] = true
			id, byID := want[i]
			if !slices.ContainsFunc(images, func(img ec2types.Image) bool {
				return !byID || (id != "" && selector.Match(id, aws.ToString(img.ImageId)))
			}) {
				unmatched = append(unmatched, i)
			}
		}
	}
	// With no ID to ask for (every ssmParameter missing), no query ran.
	for i := range want {
		if !asked[i] {
			unmatched = append(unmatched, i)
		}
	}
	return out, slices.Sorted(slices.Values(unmatched)), nil
}

// describe runs one paginated DescribeImages query with the parameters
// every AMI query carries: available images only, deprecated ones included
// (a deprecated image still serves when nothing newer does).
func (p *Provider) describe(ctx context.Context, in *ec2.DescribeImagesInput) ([]ec2types.Image, error) {
	in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("state"), Values: []string{string(ec2types.ImageStateAvailable)}})
	in.IncludeDeprecated = aws.Bool(true)
	in.MaxResults = aws.Int32(1000)
	var out []ec2types.Image
	pages := ec2.NewDescribeImagesPaginator(p.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing images: %w", err)
		}
		for _, img := range page.Images {
			if architecture(img) != "" {
				out = append(out, img)
			}
		}
	}
	return out, nil
}

// candidate is img serving its architecture plus reqs.
func (p *Provider) candidate(img ec2types.Image, reqs ...corev1.NodeSelectorRequirement) AMI {
	all := append([]corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{architecture(img)}}}, reqs...)
	return AMI{
		ID:           aws.ToString(img.ImageId),
		Name:         aws.ToString(img.Name),
		CreationDate: parseImageTime(img.CreationDate),
		Deprecated:   deprecatedAt(img, p.clock.Now()),
		Requirements: sortRequirements(all),
	}
}

// architecture maps an image's EC2 architecture to kubernetes.io/arch;
// empty for architectures Kubernetes nodes do not run (e.g. i386, Mac).
func architecture(img ec2types.Image) string {
	switch img.Architecture {
	case ec2types.ArchitectureValuesX8664:
		return "amd64"
	case ec2types.ArchitectureValuesArm64:
		return "arm64"
	}
	return ""
}

func deprecatedAt(img ec2types.Image, now time.Time) bool {
	if img.DeprecationTime == nil {
		return false
	}
	return !parseImageTime(img.DeprecationTime).After(now)
}

func parseImageTime(s *string) time.Time {
	t, err := time.Parse(imageTimeFormat, aws.ToString(s))
	if err != nil {
		// EC2 writes these times in one format; an unparsable one sorts as the oldest.
		return time.Time{}
	}
	return t
}

// query is one DescribeImages request and the indices of the terms it
// answers: the id query answers every id and ssmParameter term, a
// tags/name/owner query its one term.
type query struct {
	in    *ec2.DescribeImagesInput
	terms []int
}

// Queries builds the DescribeImages requests for non-alias terms: one for
// all id terms together with the AMI IDs ssmParameter terms resolved to,
// and one per term selecting by tags, name or owner. A name without an
// owner searches the account's own and Amazon's images.
func Queries(terms []awsv1.AMISelectorTerm, ssmIDs []string) []*ec2.DescribeImagesInput {
	var out []*ec2.DescribeImagesInput
	for _, q := range queries(terms, ssmIDs) {
		out = append(out, q.in)
	}
	return out
}

func queries(terms []awsv1.AMISelectorTerm, ssmIDs []string) []query {
	ids := slices.Clone(ssmIDs)
	byID := query{}
	var out []query
	for i, term := range terms {
		switch {
		case term.ID != "":
			ids = append(ids, term.ID)
			byID.terms = append(byID.terms, i)
		case term.SSMParameter != "":
			byID.terms = append(byID.terms, i)
		case term.Name != "" || len(term.Tags) > 0 || term.Owner != "":
			out = append(out, query{in: termQuery(term), terms: []int{i}})
		}
	}
	if len(ids) > 0 {
		slices.Sort(ids)
		byID.in = &ec2.DescribeImagesInput{Filters: []ec2types.Filter{{Name: aws.String("image-id"), Values: slices.Compact(ids)}}}
		out = append([]query{byID}, out...)
	}
	return out
}

func termQuery(term awsv1.AMISelectorTerm) *ec2.DescribeImagesInput {
	in := &ec2.DescribeImagesInput{}
	if term.Name != "" {
		in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{term.Name}})
		in.Owners = []string{"self", "amazon"}
	}
	if term.Owner != "" {
		in.Owners = []string{term.Owner}
	}
	in.Filters = append(in.Filters, selector.TagFilters(term.Tags)...)
	return in
}

// rememberLatest records the AMI a "latest" alias parameter named.
func (p *Provider) rememberLatest(param, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latest[param] = id
}

// InvalidateDeprecated describes the AMIs "latest" alias parameters named
// when last read and forgets every parameter whose AMI is now deprecated or
// gone, so AWS pulling a release is noticed without waiting a day for the
// parameter cache to expire (upstream checks every 30 minutes). It returns
// the parameters it forgot.
func (p *Provider) InvalidateDeprecated(ctx context.Context) ([]string, error) {
	p.mu.Lock()
	byID := map[string][]string{}
	for param, id := range p.latest {
		byID[id] = append(byID[id], param)
	}
	p.mu.Unlock()
	if len(byID) == 0 {
		return nil, nil
	}
	images, err := p.describeAny(ctx, slices.Sorted(maps.Keys(byID)))
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, img := range images {
		live[aws.ToString(img.ImageId)] = !deprecatedAt(img, p.clock.Now())
	}
	var forgotten []string
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, params := range byID {
		if live[id] {
			continue
		}
		for _, param := range params {
			if p.latest[param] == id {
				delete(p.latest, param)
				p.params.forget(param)
				forgotten = append(forgotten, param)
			}
		}
	}
	if len(forgotten) > 0 {
		// Every NodeClass's resolved set may name a forgotten AMI.
		for _, k := range p.cache.Keys() {
			p.cache.Remove(k)
		}
	}
	slices.Sort(forgotten)
	return forgotten, nil
}

// describeAny describes images by ID in any state, deprecated included.
func (p *Provider) describeAny(ctx context.Context, ids []string) ([]ec2types.Image, error) {
	in := &ec2.DescribeImagesInput{
		Filters:           []ec2types.Filter{{Name: aws.String("image-id"), Values: ids}},
		IncludeDeprecated: aws.Bool(true),
		MaxResults:        aws.Int32(1000),
	}
	var out []ec2types.Image
	pages := ec2.NewDescribeImagesPaginator(p.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing images: %w", err)
		}
		out = append(out, page.Images...)
	}
	return out, nil
}
