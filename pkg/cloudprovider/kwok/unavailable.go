package kwok

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// DefaultUnavailableOfferingsTTL is how long an offering refused for
// insufficient capacity stays unavailable (as EC2's ICE cache does).
const DefaultUnavailableOfferingsTTL = 3 * time.Minute

// UnavailableOfferings remembers offerings that recently ran out of
// capacity, each for a TTL, so that GetInstanceTypes reports them
// unavailable and the next scheduling round picks another offering. It is
// safe for concurrent use.
type UnavailableOfferings struct {
	mu      sync.Mutex
	clock   clock.PassiveClock
	ttl     time.Duration
	expiry  map[cloudprovider.OfferingKey]time.Time
	version uint64
}

// NewUnavailableOfferings returns an empty cache whose entries live for ttl.
func NewUnavailableOfferings(clk clock.PassiveClock, ttl time.Duration) *UnavailableOfferings {
	return &UnavailableOfferings{clock: clk, ttl: ttl, expiry: map[cloudprovider.OfferingKey]time.Time{}}
}

// MarkUnavailable makes the offering unavailable for the TTL from now.
func (u *UnavailableOfferings) MarkUnavailable(key cloudprovider.OfferingKey) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expiry[key] = u.clock.Now().Add(u.ttl)
	u.version++
}

// IsUnavailable reports whether the offering is marked and not expired.
func (u *UnavailableOfferings) IsUnavailable(key cloudprovider.OfferingKey) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	exp, ok := u.expiry[key]
	return ok && u.clock.Now().Before(exp)
}

// Flush forgets every entry.
func (u *UnavailableOfferings) Flush() {
	u.mu.Lock()
	defer u.mu.Unlock()
	clear(u.expiry)
	u.version++
}

// snapshot returns the live entries, a version that changes whenever the
// set changes, and when the earliest live entry expires (zero if none).
func (u *UnavailableOfferings) snapshot() (map[cloudprovider.OfferingKey]bool, uint64, time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.clock.Now()
	live := map[cloudprovider.OfferingKey]bool{}
	var next time.Time
	for key, exp := range u.expiry {
		if !now.Before(exp) {
			delete(u.expiry, key)
			u.version++
			continue
		}
		live[key] = true
		if next.IsZero() || exp.Before(next) {
			next = exp
		}
	}
	return live, u.version, next
}
