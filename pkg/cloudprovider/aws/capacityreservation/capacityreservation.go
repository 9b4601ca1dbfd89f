package capacityreservation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/selector"
)

const (
	// QueryTTL is how long a query's answer is reused.
	QueryTTL = time.Minute
	// AvailabilityTTL is how long a reservation's available count is kept
	// without a listing refreshing it.
	AvailabilityTTL = 24 * time.Hour
	// ExpiringWindow is how long before its end a capacity block is
	// reported as expiring: its instances are about to be reclaimed.
	ExpiringWindow = 40 * time.Minute
)

// ec2API is the slice of the EC2 API the provider calls.
type ec2API interface {
	DescribeCapacityReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, opts ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error)
}

// Provider lists capacity reservations and tracks their availability. It
// is safe for concurrent use.
type Provider struct {
	ec2     ec2API
	clock   clock.PassiveClock
	queries *utilcache.LRUExpireCache

	mu        sync.Mutex
	available map[string]availability
}

type availability struct {
	count  int
	synced time.Time
}

// NewProvider returns a provider caching on clk.
func NewProvider(api ec2API, clk clock.PassiveClock) *Provider {
	return &Provider{ec2: api, clock: clk, queries: utilcache.NewLRUExpireCacheWithClock(1000, clk), available: map[string]availability{}}
}

// List returns the active, unexpired reservations nodeClass selects, by ID.
func (p *Provider) List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) ([]ec2types.CapacityReservation, error) {
	return p.list(ctx, Queries(nodeClass.Spec.CapacityReservationSelectorTerms))
}

// Get returns the active, unexpired reservations among ids, by ID; an ID
// EC2 does not know (or no longer reports active) is left out. Answers
// are cached as List's are.
func (p *Provider) Get(ctx context.Context, ids ...string) ([]ec2types.CapacityReservation, error) {
	terms := make([]awsv1.CapacityReservationSelectorTerm, 0, len(ids))
	for _, id := range slices.Compact(slices.Sorted(slices.Values(ids))) {
		if id != "" {
			terms = append(terms, awsv1.CapacityReservationSelectorTerm{ID: id})
		}
	}
	return p.list(ctx, Queries(terms))
}

func (p *Provider) list(ctx context.Context, queries []*ec2.DescribeCapacityReservationsInput) ([]ec2types.CapacityReservation, error) {
	byID := map[string]ec2types.CapacityReservation{}
	for _, in := range queries {
		found, err := p.query(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, r := range found {
			byID[aws.ToString(r.CapacityReservationId)] = r
		}
	}
	now := p.clock.Now()
	out := make([]ec2types.CapacityReservation, 0, len(byID))
	for _, r := range byID {
		if r.EndDate != nil && !r.EndDate.After(now) {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b ec2types.CapacityReservation) int {
		return strings.Compare(aws.ToString(a.CapacityReservationId), aws.ToString(b.CapacityReservationId))
	})
	p.sync(out, now)
	return out, nil
}

func (p *Provider) query(ctx context.Context, in *ec2.DescribeCapacityReservationsInput) ([]ec2types.CapacityReservation, error) {
	key := queryKey(in)
	if cached, ok := p.queries.Get(key); ok {
		return cached.([]ec2types.CapacityReservation), nil
	}
	var out []ec2types.CapacityReservation
	pages := ec2.NewDescribeCapacityReservationsPaginator(p.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if len(in.CapacityReservationIds) > 0 && isNotFound(err) {
			// The reservation was cancelled or never existed: it matches nothing.
			break
		}
		if err != nil {
			return nil, fmt.Errorf("describing capacity reservations: %w", err)
		}
		out = append(out, page.CapacityReservations...)
	}
	p.queries.Add(key, out, QueryTTL)
	return out, nil
}

func isNotFound(err error) bool {
	apiErr, ok := errors.AsType[smithy.APIError](err)
	return ok && apiErr.ErrorCode() == "InvalidCapacityReservationId.NotFound"
}

// queryKey identifies a query's parameters.
func queryKey(in *ec2.DescribeCapacityReservationsInput) string {
	var b strings.Builder
	b.WriteString(strings.Join(in.CapacityReservationIds, ","))
	for _, f := range in.Filters {
		b.WriteString("|" + aws.ToString(f.Name) + "=" + strings.Join(f.Values, ","))
	}
	return b.String()
}

// Queries builds one DescribeCapacityReservations request per term, each
// asking for active reservations only.
func Queries(terms []awsv1.CapacityReservationSelectorTerm) []*ec2.DescribeCapacityReservationsInput {
	active := ec2types.Filter{Name: aws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}}
	var out []*ec2.DescribeCapacityReservationsInput
	for _, term := range terms {
		if term.ID != "" {
			out = append(out, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{term.ID}, Filters: []ec2types.Filter{active}})
			continue
		}
		var filters []ec2types.Filter
		if term.OwnerID != "" {
			filters = append(filters, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{term.OwnerID}})
		}
		if term.InstanceMatchCriteria != "" {
			filters = append(filters, ec2types.Filter{Name: aws.String("instance-match-criteria"), Values: []string{term.InstanceMatchCriteria}})
		}
		filters = append(filters, selector.TagFilters(term.Tags)...)
		out = append(out, &ec2.DescribeCapacityReservationsInput{Filters: append(filters, active), MaxResults: aws.Int32(1000)})
	}
	return out
}

// Status converts reservations into the EC2NodeClass status form at now:
// reservations whose match criteria or type karp cannot launch into are
// left out; a capacity block within ExpiringWindow of its end is expiring.
func Status(reservations []ec2types.CapacityReservation, now time.Time) []awsv1.CapacityReservation {
	out := make([]awsv1.CapacityReservation, 0, len(reservations))
	for _, r := range reservations {
		criteria := string(r.InstanceMatchCriteria)
		if criteria != string(ec2types.InstanceMatchCriteriaOpen) && criteria != string(ec2types.InstanceMatchCriteriaTargeted) {
			continue
		}
		kind := string(r.ReservationType)
		if kind == "" {
			kind = awsv1.CapacityReservationTypeDefault
		}
		if kind != awsv1.CapacityReservationTypeDefault && kind != awsv1.CapacityReservationTypeCapacityBlock {
			continue
		}
		status := awsv1.CapacityReservation{
			ID:                    aws.ToString(r.CapacityReservationId),
			AvailabilityZone:      aws.ToString(r.AvailabilityZone),
			InstanceType:          aws.ToString(r.InstanceType),
			InstanceMatchCriteria: criteria,
			OwnerID:               aws.ToString(r.OwnerId),
			ReservationType:       kind,
			Interruptible:         aws.ToBool(r.Interruptible),
			State:                 "active",
		}
		if r.EndDate != nil {
			status.EndTime = &metav1.Time{Time: *r.EndDate}
		}
		if Expiring(r, now) {
			status.State = "expiring"
		}
		out = append(out, status)
	}
	slices.SortFunc(out, func(a, b awsv1.CapacityReservation) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Expiring reports whether the reservation is a capacity block within
// ExpiringWindow of its end at now: EC2 starts reclaiming its instances 30
// minutes before the end, so karp stops launching into it and drains its
// nodes 10 minutes before that (upstream's window).
func Expiring(r ec2types.CapacityReservation, now time.Time) bool {
	return r.ReservationType == ec2types.CapacityReservationTypeCapacityBlock && r.EndDate != nil &&
		!now.Before(r.EndDate.Add(-ExpiringWindow))
}

// Find returns the reservation with the ID among an EC2NodeClass's status
// reservations.
func Find(reservations []awsv1.CapacityReservation, id string) (awsv1.CapacityReservation, bool) {
	for _, r := range reservations {
		if r.ID == id {
			return r, true
		}
	}
	return awsv1.CapacityReservation{}, false
}

func (p *Provider) sync(reservations []ec2types.CapacityReservation, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range reservations {
		p.available[aws.ToString(r.CapacityReservationId)] = availability{count: int(aws.ToInt32(r.AvailableInstanceCount)), synced: now}
	}
}

// AvailableInstanceCount returns how many more instances the reservation
// can take; ok is false when no listing within AvailabilityTTL saw it.
func (p *Provider) AvailableInstanceCount(id string) (count int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.available[id]
	if !ok || p.clock.Since(a.synced) > AvailabilityTTL {
		return 0, false
	}
	return a.count, true
}

// MarkLaunched counts an instance launched into the reservation at
// launchedAt, unless a listing after that already did.
func (p *Provider) MarkLaunched(id string, launchedAt time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.available[id]; ok && !a.synced.After(launchedAt) {
		a.count = max(a.count-1, 0)
		p.available[id] = a
	}
}

// MarkTerminated gives the reservation back an instance.
func (p *Provider) MarkTerminated(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.available[id]; ok {
		a.count++
		p.available[id] = a
	}
}

// MarkUnavailable zeroes the reservations' counts after EC2 refused a
// launch into them for lack of capacity.
func (p *Provider) MarkUnavailable(ids ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		if a, ok := p.available[id]; ok {
			a.count = 0
			p.available[id] = a
		}
	}
}

// RequeueAfter is when the reservations' status next changes on its own:
// the next end date or expiring boundary within interval, else interval.
func RequeueAfter(reservations []ec2types.CapacityReservation, now time.Time, interval time.Duration) time.Duration {
	next := interval
	for _, r := range reservations {
		if r.EndDate == nil {
			continue
		}
		for _, at := range []time.Time{r.EndDate.Add(-ExpiringWindow), *r.EndDate} {
			if d := at.Sub(now); d > 0 && d < next {
				next = d
			}
		}
	}
	return next
}
