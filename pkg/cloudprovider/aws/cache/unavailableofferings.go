package cache

import (
	"context"
	"maps"
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// UnavailableOfferingsTTL is how long a refused offering, capacity type or
// subnet stays unavailable; marking it again extends the TTL.
const UnavailableOfferingsTTL = 3 * time.Minute

// UnavailableOfferings remembers offerings, capacity types and subnets EC2
// recently refused. It is safe for concurrent use.
type UnavailableOfferings struct {
	clock clock.PassiveClock
	ttl   time.Duration

	mu            sync.Mutex
	offerings     map[offeringKey]time.Time
	capacityTypes map[string]time.Time
	subnets       map[string]time.Time
	// zoneShifts are the zone IDs under an active ARC zonal shift, each
	// with when its shift ends (package zonalshift sets them).
	zoneShifts map[string]time.Time
	// typeSeq counts the changes to each instance type's offering entries;
	// globalSeq counts the changes to capacity-type, subnet and zonal
	// shift entries, which concern every instance type.
	typeSeq   map[string]uint64
	globalSeq uint64
	// version counts every change, whatever it concerns.
	version uint64
	// nextExpiry is the earliest expiry among the entries (zero if none),
	// so lookups scan for expired entries only when one is due.
	nextExpiry time.Time
}

// offeringKey names a refused offering; placementGroup and partition are
// set when the refusal was a launch into a placement group (and one of
// its partitions), which says nothing of the offering outside the group.
type offeringKey struct{ instanceType, zone, capacityType, placementGroup, partition string }

// NewUnavailableOfferings returns an empty cache with upstream's TTL.
func NewUnavailableOfferings(clk clock.PassiveClock) *UnavailableOfferings {
	return NewUnavailableOfferingsWithTTL(clk, UnavailableOfferingsTTL)
}

// NewUnavailableOfferingsWithTTL returns an empty cache whose entries live
// for ttl.
func NewUnavailableOfferingsWithTTL(clk clock.PassiveClock, ttl time.Duration) *UnavailableOfferings {
	return &UnavailableOfferings{
		clock:         clk,
		ttl:           ttl,
		offerings:     map[offeringKey]time.Time{},
		capacityTypes: map[string]time.Time{},
		subnets:       map[string]time.Time{},
		zoneShifts:    map[string]time.Time{},
		typeSeq:       map[string]uint64{},
	}
}

// MarkUnavailable makes one offering unavailable for the TTL; reason is the
// EC2 error code (e.g. InsufficientInstanceCapacity) and is logged.
func (u *UnavailableOfferings) MarkUnavailable(ctx context.Context, reason, instanceType, zone, capacityType string) {
	log.FromContext(ctx).V(1).Info("marking offering unavailable", "reason", reason, "instanceType", instanceType, "zone", zone, "capacityType", capacityType, "ttl", u.ttl)
	u.mark(offeringKey{instanceType: instanceType, zone: zone, capacityType: capacityType})
}

// MarkUnavailableInPlacementGroup makes one offering unavailable for the
// TTL inside a placement group only (upstream's scoping): EC2 refused a
// launch into the group, or into its partition when partition is set,
// which says nothing of the same offering outside the group. Offerings
// read through IsUnavailableIn with the group see the group-wide entries;
// an entry for one partition is kept apart from them, as upstream keys it.
func (u *UnavailableOfferings) MarkUnavailableInPlacementGroup(ctx context.Context, reason, instanceType, zone, capacityType, groupID, partition string) {
	log.FromContext(ctx).V(1).Info("marking offering unavailable in placement group", "reason", reason, "instanceType", instanceType,
		"zone", zone, "capacityType", capacityType, "placementGroupID", groupID, "placementGroupPartition", partition, "ttl", u.ttl)
	u.mark(offeringKey{instanceType: instanceType, zone: zone, capacityType: capacityType, placementGroup: groupID, partition: partition})
}

func (u *UnavailableOfferings) mark(key offeringKey) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.offerings[key] = u.expiry()
	u.typeSeq[key.instanceType]++
	u.version++
}

// MarkCapacityTypeUnavailable makes every offering of a capacity type
// unavailable for the TTL (spot when the spot service-linked role cannot be
// created).
func (u *UnavailableOfferings) MarkCapacityTypeUnavailable(ctx context.Context, reason, capacityType string) {
	log.FromContext(ctx).V(1).Info("marking capacity type unavailable", "reason", reason, "capacityType", capacityType, "ttl", u.ttl)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.capacityTypes[capacityType] = u.expiry()
	u.globalSeq++
	u.version++
}

// MarkSubnetUnavailable makes a subnet unavailable for the TTL (no free
// addresses); a zone whose subnets are all unavailable offers nothing.
func (u *UnavailableOfferings) MarkSubnetUnavailable(ctx context.Context, reason, subnetID string) {
	log.FromContext(ctx).V(1).Info("marking subnet unavailable", "reason", reason, "subnet", subnetID, "ttl", u.ttl)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.subnets[subnetID] = u.expiry()
	u.globalSeq++
	u.version++
}

// IsUnavailable reports whether the offering, or its whole capacity type,
// is marked and not expired.
func (u *UnavailableOfferings) IsUnavailable(instanceType, zone, capacityType string) bool {
	return u.IsUnavailableIn(instanceType, zone, capacityType, "")
}

// IsUnavailableIn is IsUnavailable for a class that launches into
// placement group groupID ("" for none): the offering is also unavailable
// when EC2 recently refused it inside that group.
func (u *UnavailableOfferings) IsUnavailableIn(instanceType, zone, capacityType, groupID string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.evictExpired()
	key := offeringKey{instanceType: instanceType, zone: zone, capacityType: capacityType}
	_, offering := u.offerings[key]
	if !offering && groupID != "" {
		key.placementGroup = groupID
		_, offering = u.offerings[key]
	}
	_, wholeType := u.capacityTypes[capacityType]
	return offering || wholeType
}

// IsSubnetUnavailable reports whether the subnet is marked and not expired.
func (u *UnavailableOfferings) IsSubnetUnavailable(subnetID string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.evictExpired()
	_, ok := u.subnets[subnetID]
	return ok
}

// SetZonalShifts replaces the zones under an active ARC zonal shift: zone
// ID → when the shift ends. Every offering of a shifted zone is
// unavailable until then (upstream's --enable-zonal-shift); an ended shift
// expires like any entry.
func (u *UnavailableOfferings) SetZonalShifts(shifts map[string]time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.evictExpired()
	now, next := u.clock.Now(), map[string]time.Time{}
	for zoneID, end := range shifts {
		if now.Before(end) {
			next[zoneID] = end
		}
	}
	if maps.Equal(next, u.zoneShifts) {
		return
	}
	u.zoneShifts = next
	for _, end := range next {
		if u.nextExpiry.IsZero() || end.Before(u.nextExpiry) {
			u.nextExpiry = end
		}
	}
	u.globalSeq++
	u.version++
}

// IsZoneShifted reports whether the zone (by ID) is under an active ARC
// zonal shift.
func (u *UnavailableOfferings) IsZoneShifted(zoneID string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.evictExpired()
	_, ok := u.zoneShifts[zoneID]
	return ok
}

// SeqNum changes whenever the answer of IsUnavailable for some offering of
// instanceType (or IsSubnetUnavailable, IsZoneShifted) may have changed: an entry was
// marked, or expired. Callers caching offerings rebuild them when it moves.
func (u *UnavailableOfferings) SeqNum(instanceType string) uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.evictExpired()
	return u.typeSeq[instanceType] + u.globalSeq
}

// Version changes whenever any entry is marked or expires: a cache of
// everything derived from the entries is valid while it stays the same.
func (u *UnavailableOfferings) Version() uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.evictExpired()
	return u.version
}

// Flush forgets every entry except the zonal shifts, which are ARC's
// state, not refusals.
func (u *UnavailableOfferings) Flush() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for key := range u.offerings {
		u.typeSeq[key.instanceType]++
	}
	clear(u.offerings)
	clear(u.capacityTypes)
	clear(u.subnets)
	u.globalSeq++
	u.version++
	u.nextExpiry = time.Time{}
	for _, end := range u.zoneShifts {
		if u.nextExpiry.IsZero() || end.Before(u.nextExpiry) {
			u.nextExpiry = end
		}
	}
}

// expiry returns when an entry marked now expires, keeping nextExpiry the
// earliest one. Callers hold mu.
func (u *UnavailableOfferings) expiry() time.Time {
	at := u.clock.Now().Add(u.ttl)
	if u.nextExpiry.IsZero() || at.Before(u.nextExpiry) {
		u.nextExpiry = at
	}
	return at
}

// evictExpired drops the entries whose TTL ran out, bumping the sequence
// numbers they affect. Callers hold mu.
func (u *UnavailableOfferings) evictExpired() {
	now := u.clock.Now()
	if u.nextExpiry.IsZero() || now.Before(u.nextExpiry) {
		return
	}
	var next time.Time
	keep := func(at time.Time) bool {
		if !now.Before(at) {
			return false
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
		return true
	}
	for key, at := range u.offerings {
		if !keep(at) {
			delete(u.offerings, key)
			u.typeSeq[key.instanceType]++
			u.version++
		}
	}
	for _, m := range []map[string]time.Time{u.capacityTypes, u.subnets, u.zoneShifts} {
		for key, at := range m {
			if !keep(at) {
				delete(m, key)
				u.globalSeq++
				u.version++
			}
		}
	}
	u.nextExpiry = next
}
