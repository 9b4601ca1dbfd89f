package aws

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
)

// DriftInstancesTTL is how long one listing of the cluster's instances
// answers drift checks. The core checks every NodeClaim for drift when its
// EC2NodeClass changes and every five minutes otherwise; what drift reads
// of an instance (subnet, security groups, reservation) almost never
// changes while it runs, so one DescribeInstances listing a minute serves
// every check instead of one call per NodeClaim.
const DriftInstancesTTL = time.Minute

// instanceSource lists and describes the cluster's instances (package
// instance's Provider).
type instanceSource interface {
	List(ctx context.Context) ([]*instance.Instance, error)
	Get(ctx context.Context, id string) (*instance.Instance, error)
}

// instanceSnapshot serves the instances drift compares from the last
// listing of the cluster's instances. An expired snapshot is replaced by a
// new listing, one at a time: callers arriving during a listing wait for
// it and share it. An instance missing from a live snapshot (launched
// after it was taken) is described on its own, through the instance
// provider's batched DescribeInstances.
type instanceSnapshot struct {
	source instanceSource
	clock  clock.PassiveClock
	ttl    time.Duration

	// listing is held while a listing runs.
	listing sync.Mutex

	mu      sync.Mutex
	byID    map[string]*instance.Instance
	takenAt time.Time
	// generation counts listings, so a caller that waited for someone
	// else's listing does not list again.
	generation uint64
}

func newInstanceSnapshot(source instanceSource, clk clock.PassiveClock, ttl time.Duration) *instanceSnapshot {
	return &instanceSnapshot{source: source, clock: clk, ttl: ttl}
}

// get returns the live instance behind the providerID, or a
// NodeClaimNotFoundError.
func (s *instanceSnapshot) get(ctx context.Context, providerID string) (*instance.Instance, error) {
	id, err := instance.ParseProviderID(providerID)
	if err != nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(err)
	}
	inst, fresh, generation := s.lookup(id)
	if !fresh {
		if err := s.refresh(ctx, generation); err != nil {
			return nil, err
		}
		inst, _, _ = s.lookup(id)
	}
	if inst != nil {
		return inst, nil
	}
	if inst, err = s.source.Get(ctx, id); err != nil {
		return nil, err
	}
	s.put(inst)
	return inst, nil
}

// lookup returns the snapshot's instance (nil when absent), whether the
// snapshot is still live, and its generation.
func (s *instanceSnapshot) lookup(id string) (*instance.Instance, bool, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := s.byID != nil && s.clock.Since(s.takenAt) < s.ttl
	return s.byID[id], fresh, s.generation
}

// refresh lists the instances unless another caller did since generation
// seen.
func (s *instanceSnapshot) refresh(ctx context.Context, seen uint64) error {
	s.listing.Lock()
	defer s.listing.Unlock()
	s.mu.Lock()
	done := s.generation != seen
	s.mu.Unlock()
	if done {
		return nil
	}
	takenAt := s.clock.Now()
	instances, err := s.source.List(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	// A failed listing counts too: the callers that waited for it describe
	// their instance on their own (batched) rather than each listing again.
	s.generation++
	if err != nil {
		return err
	}
	s.byID = make(map[string]*instance.Instance, len(instances))
	for _, inst := range instances {
		s.byID[inst.ID] = inst
	}
	s.takenAt = takenAt
	return nil
}

// put records a freshly described instance in the live snapshot.
func (s *instanceSnapshot) put(inst *instance.Instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID != nil {
		s.byID[inst.ID] = inst
	}
}
