package zonalshift

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ARCAPI is the ARC zonal shift call the provider makes.
type ARCAPI interface {
	GetManagedResource(ctx context.Context, in *arczonalshift.GetManagedResourceInput, opts ...func(*arczonalshift.Options)) (*arczonalshift.GetManagedResourceOutput, error)
}

// clusterDescriber is the EKS call the cluster's ARN comes from.
type clusterDescriber interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, opts ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// shiftSink takes the active shifts: zone ID → when the shift ends (the
// unavailable-offerings cache).
type shiftSink interface {
	SetZonalShifts(shifts map[string]time.Time)
}

// Provider holds the cluster's active zonal shifts. It is safe for
// concurrent use.
type Provider struct {
	arc        ARCAPI
	clusterARN string
	sink       shiftSink
	clock      clock.PassiveClock

	mu sync.Mutex
	// shifts are the applied shifts last read: zone ID → latest expiry.
	shifts map[string]time.Time
}

// NewProvider resolves the cluster's ARN with eks:DescribeCluster and reads
// its zonal shifts once. As upstream, a cluster that is not a resource
// managed by zonal shift (or a missing permission) stops the process at
// start rather than launching into shifted zones unnoticed.
func NewProvider(ctx context.Context, arc ARCAPI, eksAPI clusterDescriber, clusterName string, sink shiftSink, clk clock.PassiveClock) (*Provider, error) {
	if arc == nil {
		return nil, errors.New("--enable-zonal-shift (ENABLE_ZONAL_SHIFT) needs an ARC zonal shift client, and this process has none")
	}
	if eksAPI == nil {
		return nil, errors.New("--enable-zonal-shift (ENABLE_ZONAL_SHIFT) needs an EKS client to read the cluster's ARN with eks:DescribeCluster, and this process has none")
	}
	out, err := eksAPI.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &clusterName})
	if err != nil {
		return nil, fmt.Errorf("reading the ARN of EKS cluster %q for --enable-zonal-shift with eks:DescribeCluster: %w", clusterName, err)
	}
	if out.Cluster == nil || out.Cluster.Arn == nil || *out.Cluster.Arn == "" {
		return nil, fmt.Errorf("eks:DescribeCluster reports no ARN for cluster %q (--enable-zonal-shift)", clusterName)
	}
	p := &Provider{arc: arc, clusterARN: *out.Cluster.Arn, sink: sink, clock: clk, shifts: map[string]time.Time{}}
	if err := p.Update(ctx); err != nil {
		return nil, fmt.Errorf("reading the zonal shifts of cluster %s (--enable-zonal-shift): the cluster must be registered with ARC zonal shift "+
			"and the controller allowed arc-zonal-shift:GetManagedResource on it: %w", p.clusterARN, err)
	}
	return p, nil
}

// Update reads the cluster's zonal shifts and replaces the active ones;
// on error the previous ones stay.
func (p *Provider) Update(ctx context.Context) error {
	out, err := p.arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: &p.clusterARN})
	if err != nil {
		return fmt.Errorf("getting zonal shifts: %w", err)
	}
	shifts := activeShifts(out.ZonalShifts, p.clock.Now())
	p.mu.Lock()
	changed := !maps.Equal(shifts, p.shifts)
	p.shifts = shifts
	p.mu.Unlock()
	p.sink.SetZonalShifts(shifts)
	if changed {
		log.FromContext(ctx).Info("zonal shifts changed", "cluster", p.clusterARN, "shiftedZoneIDs", sets.List(sets.KeySet(shifts)))
	}
	return nil
}

// ShiftedZones are the zone IDs shifted away from now.
func (p *Provider) ShiftedZones() sets.Set[string] {
	p.mu.Lock()
	defer p.mu.Unlock()
	now, out := p.clock.Now(), sets.New[string]()
	for zoneID, end := range p.shifts {
		if now.Before(end) {
			out.Insert(zoneID)
		}
	}
	return out
}

// activeShifts are the applied shifts that have not expired at now: zone
// ID → the latest expiry among them.
func activeShifts(shifts []arctypes.ZonalShiftInResource, now time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for _, s := range shifts {
		if s.AwayFrom == nil || *s.AwayFrom == "" || s.ExpiryTime == nil || s.AppliedStatus != arctypes.AppliedStatusApplied {
			continue
		}
		if end := *s.ExpiryTime; now.Before(end) && end.After(out[*s.AwayFrom]) {
			out[*s.AwayFrom] = end
		}
	}
	return out
}
