package fake

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"k8s.io/utils/clock"
)

// ARC is a stateful fake of the ARC zonal shift call the provider makes
// (GetManagedResource). Tests register a managed resource (an EKS
// cluster's ARN) with AddManagedResource, then start and cancel zonal
// shifts on it. As in ARC, a shift past its expiry is no longer listed,
// and a resource that is not registered is a ResourceNotFoundException.
type ARC struct {
	Faults

	clock clock.PassiveClock

	mu        sync.Mutex
	resources map[string][]arctypes.ZonalShiftInResource
	nextID    int
}

// NewARC returns a fake with no managed resources; clk tells when shifts
// expire (nil: the real clock).
func NewARC(clk clock.PassiveClock) *ARC {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &ARC{clock: clk, resources: map[string][]arctypes.ZonalShiftInResource{}}
}

// AddManagedResource registers a resource (an EKS cluster's ARN) with
// zonal shift.
func (a *ARC) AddManagedResource(arn string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.resources[arn]; !ok {
		a.resources[arn] = nil
	}
}

// StartZonalShift shifts the resource's traffic away from a zone (by zone
// ID) for d, applied, and returns the shift's ID.
func (a *ARC) StartZonalShift(arn, awayFrom string, d time.Duration) string {
	return a.addShift(arn, awayFrom, d, arctypes.AppliedStatusApplied)
}

// StartUnappliedZonalShift records a shift ARC did not apply (another
// shift took precedence): it is listed but shifts nothing.
func (a *ARC) StartUnappliedZonalShift(arn, awayFrom string, d time.Duration) string {
	return a.addShift(arn, awayFrom, d, arctypes.AppliedStatusNotApplied)
}

func (a *ARC) addShift(arn, awayFrom string, d time.Duration, status arctypes.AppliedStatus) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nextID++
	id := fmt.Sprintf("zs-%d", a.nextID)
	start := a.clock.Now()
	a.resources[arn] = append(a.resources[arn], arctypes.ZonalShiftInResource{
		ZonalShiftId:       ptr(id),
		ResourceIdentifier: ptr(arn),
		AwayFrom:           ptr(awayFrom),
		AppliedStatus:      status,
		StartTime:          &start,
		ExpiryTime:         ptr(start.Add(d)),
		Comment:            ptr("simulated"),
	})
	return id
}

// CancelZonalShift ends a shift at once.
func (a *ARC) CancelZonalShift(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for arn, shifts := range a.resources {
		var kept []arctypes.ZonalShiftInResource
		for _, s := range shifts {
			if deref(s.ZonalShiftId) != id {
				kept = append(kept, s)
			}
		}
		a.resources[arn] = kept
	}
}

// GetManagedResource returns the resource's zonal shifts that have not
// expired, or ResourceNotFoundException for a resource not registered.
func (a *ARC) GetManagedResource(_ context.Context, in *arczonalshift.GetManagedResourceInput, _ ...func(*arczonalshift.Options)) (*arczonalshift.GetManagedResourceOutput, error) {
	if err := a.enter("GetManagedResource"); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	arn := deref(in.ResourceIdentifier)
	shifts, ok := a.resources[arn]
	if !ok {
		return nil, &arctypes.ResourceNotFoundException{Message: ptr(fmt.Sprintf("The resource %s was not found.", arn))}
	}
	out := &arczonalshift.GetManagedResourceOutput{Arn: ptr(arn)}
	now := a.clock.Now()
	for _, s := range shifts {
		if s.ExpiryTime.After(now) {
			out.ZonalShifts = append(out.ZonalShifts, s)
		}
	}
	return out, nil
}
