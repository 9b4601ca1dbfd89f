package instance

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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// Tag keys the provider writes and filters on (upstream's).
const (
	TagNodePool       = awsv1.TagNodePool
	TagNodeClaim      = awsv1.TagNodeClaim
	TagNodeClass      = awsv1.TagNodeClass
	TagEKSClusterName = awsv1.TagEKSClusterName
)

// ClusterTagKey is the kubernetes.io/cluster/<name> tag, "owned" on every
// resource karp launches.
func ClusterTagKey(clusterName string) string { return awsv1.ClusterTagKey(clusterName) }

// liveStates are the states of instances that exist for karp; terminated
// instances linger in DescribeInstances for a while and are ignored.
var liveStates = []string{
	string(ec2types.InstanceStateNamePending),
	string(ec2types.InstanceStateNameRunning),
	string(ec2types.InstanceStateNameStopping),
	string(ec2types.InstanceStateNameStopped),
	string(ec2types.InstanceStateNameShuttingDown),
}

// Batch windows (upstream's): CreateFleet requests are held briefly so a
// burst of alike NodeClaims becomes one call; describes and terminations
// a little longer since nobody waits on them as eagerly.
const (
	fleetIdle       = 35 * time.Millisecond
	fleetMax        = time.Second
	fleetMaxItems   = 1000
	describeIdle    = 100 * time.Millisecond
	describeMax     = time.Second
	describeMaxSize = 500
)

// Instance is an EC2 instance karp launched.
type Instance struct {
	ID   string
	Type string
	Zone string
	// ZoneID is the zone's ID (use1-az1), when EC2 told.
	ZoneID       string
	CapacityType string
	// ReservationID is the capacity reservation a reserved instance runs in.
	ReservationID string
	// ReservationType (default or capacity-block) and
	// ReservationInterruptible describe that reservation.
	ReservationType          string
	ReservationInterruptible bool
	ImageID                  string
	SubnetID                 string
	State                    string
	LaunchTime               time.Time
	SecurityGroupIDs         []string
	Tags                     map[string]string
	// Tenancy is default or dedicated.
	Tenancy string
	// PlacementGroupID and PlacementPartition are the placement group the
	// instance runs in and its partition there (0 outside partition
	// groups, or while EC2 has not told).
	PlacementGroupID   string
	PlacementPartition int32
}

// ProviderID is the instance's providerID, aws:///<zone>/<instance-id>.
func (i *Instance) ProviderID() string { return ProviderID(i.Zone, i.ID) }

// ProviderID builds aws:///<zone>/<instance-id>.
func ProviderID(zone, id string) string { return fmt.Sprintf("aws:///%s/%s", zone, id) }

// ParseProviderID returns the instance ID of an aws:///<zone>/<id>
// providerID (the last path segment).
func ParseProviderID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, "aws://")
	i := strings.LastIndex(rest, "/")
	if !ok || i < 0 || !strings.HasPrefix(rest[i+1:], "i-") {
		return "", fmt.Errorf("providerID %q is not of the form aws:///<zone>/<instance-id>", providerID)
	}
	return rest[i+1:], nil
}

// Provider launches, finds and terminates the EC2 instances behind
// NodeClaims. CreateFleet, DescribeInstances and TerminateInstances calls
// are batched.
type Provider struct {
	ec2         EC2API
	clock       clock.WithTicker
	clusterName string
	unavailable UnavailableOfferings

	fleets    *batcher[fleetItem, *Instance]
	lookups   *batcher[string, *Instance]
	describes *batcher[string, *Instance]
	terminate *batcher[string, struct{}]

	mu sync.Mutex
	// launched remembers the instance this process launched for each
	// NodeClaim UID, so a retried Create returns it without asking EC2.
	launched map[types.UID]*Instance
}

// NewProvider builds the provider. unavailable may be nil (no offering is
// ever marked unavailable).
func NewProvider(api EC2API, clk clock.WithTicker, clusterName string, unavailable UnavailableOfferings) *Provider {
	p := &Provider{ec2: api, clock: clk, clusterName: clusterName, unavailable: unavailable, launched: map[types.UID]*Instance{}}
	p.fleets = newBatcher("create_fleet", clk, fleetIdle, fleetMax, fleetMaxItems, p.createFleet)
	p.lookups = newBatcher("describe_instances", clk, describeIdle, describeMax, describeMaxSize, p.lookupNodeClaims)
	p.describes = newBatcher("describe_instances", clk, describeIdle, describeMax, describeMaxSize, p.describeIDs)
	p.terminate = newBatcher("terminate_instances", clk, describeIdle, describeMax, describeMaxSize, p.terminateIDs)
	return p
}

// Get returns the live instance with the ID, or a NodeClaimNotFoundError.
func (p *Provider) Get(ctx context.Context, id string) (*Instance, error) {
	inst, err := p.describes.Add(ctx, "ids", id)
	if err != nil {
		return nil, err
	}
	if inst == nil {
		return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s not found", id))
	}
	return inst, nil
}

// List returns every live instance karp launched in this cluster. The
// answer is checked against the request's filters, whatever EC2 applied.
func (p *Provider) List(ctx context.Context) ([]*Instance, error) {
	found, err := p.describeAll(ctx, &ec2.DescribeInstancesInput{
		MaxResults: aws.Int32(1000),
		Filters: []ec2types.Filter{
			{Name: aws.String("tag-key"), Values: []string{TagNodePool}},
			{Name: aws.String("tag-key"), Values: []string{TagNodeClass}},
			{Name: aws.String("tag:" + TagEKSClusterName), Values: []string{p.clusterName}},
			{Name: aws.String("instance-state-name"), Values: liveStates},
		},
	})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(found, func(inst *Instance) bool {
		_, hasClass := inst.Tags[TagNodeClass]
		return !hasClass || inst.Tags[TagEKSClusterName] != p.clusterName || !p.ours(inst) || !isLive(inst)
	}), nil
}

// ours reports whether the instance carries the tags karp launches with in
// this cluster: a NodePool, and the cluster's name or ownership tag. Only
// such instances are ever terminated.
func (p *Provider) ours(inst *Instance) bool {
	if _, ok := inst.Tags[TagNodePool]; !ok {
		return false
	}
	return inst.Tags[TagEKSClusterName] == p.clusterName || inst.Tags[ClusterTagKey(p.clusterName)] == "owned"
}

func isLive(inst *Instance) bool { return slices.Contains(liveStates, inst.State) }

// Delete terminates the instance. It returns a NodeClaimNotFoundError
// once the instance is gone, and nil while it is shutting down. An
// instance without karp's tags for this cluster is never terminated: it
// is reported not found, so its NodeClaim can go.
func (p *Provider) Delete(ctx context.Context, id string) error {
	inst, err := p.Get(ctx, id)
	if err != nil {
		return err
	}
	if !p.ours(inst) {
		log.FromContext(ctx).Info("not terminating instance without this cluster's tags", "instance", id, "cluster", p.clusterName)
		return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s is not tagged for cluster %s and nodepool", id, p.clusterName))
	}
	if inst.State == string(ec2types.InstanceStateNameShuttingDown) {
		return nil
	}
	if _, err := p.terminate.Add(ctx, "terminate", id); err != nil {
		TerminationFailuresTotal.WithLabelValues(inst.Zone, inst.ZoneID).Inc()
		return fmt.Errorf("terminating instance %s: %w", id, err)
	}
	return nil
}

// describeAll pages through DescribeInstances.
func (p *Provider) describeAll(ctx context.Context, in *ec2.DescribeInstancesInput) ([]*Instance, error) {
	var out []*Instance
	for {
		page, err := p.ec2.DescribeInstances(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describing instances: %w", err)
		}
		for _, r := range page.Reservations {
			for i := range r.Instances {
				out = append(out, fromEC2(&r.Instances[i]))
			}
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// describeIDs describes a batch of instance IDs in one call. EC2 fails the
// whole call when one ID is unknown; the IDs are then described one by one
// so each caller learns about its own.
func (p *Provider) describeIDs(ctx context.Context, ids []string) []batchResult[*Instance] {
	unique := slices.Compact(slices.Sorted(slices.Values(ids)))
	found, err := p.describeAll(ctx, &ec2.DescribeInstancesInput{
		InstanceIds: unique,
		Filters:     []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: liveStates}},
	})
	if err != nil && IsNotFound(err) && len(unique) > 1 {
		return p.describeEach(ctx, ids)
	}
	out := make([]batchResult[*Instance], len(ids))
	for i, id := range ids {
		switch {
		case IsNotFound(err):
		case err != nil:
			out[i].err = err
		default:
			out[i].value = findInstance(found, id)
		}
	}
	return out
}

func (p *Provider) describeEach(ctx context.Context, ids []string) []batchResult[*Instance] {
	out := make([]batchResult[*Instance], len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			found, err := p.describeAll(ctx, &ec2.DescribeInstancesInput{
				InstanceIds: []string{id},
				Filters:     []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: liveStates}},
			})
			if err != nil && !IsNotFound(err) {
				out[i].err = err
				return
			}
			out[i].value = findInstance(found, id)
		})
	}
	wg.Wait()
	return out
}

// findInstance returns the live instance with the ID among those EC2
// answered with (which may hold others, or terminated ones, whatever the
// request asked).
func findInstance(instances []*Instance, id string) *Instance {
	for _, inst := range instances {
		if inst.ID == id && isLive(inst) {
			return inst
		}
	}
	return nil
}

// lookupNodeClaims finds the live instances tagged with a batch of
// NodeClaim names, in one call (the tag filter's values are ORed).
func (p *Provider) lookupNodeClaims(ctx context.Context, names []string) []batchResult[*Instance] {
	found, err := p.describeAll(ctx, &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{
			{Name: aws.String("tag:" + TagNodeClaim), Values: slices.Compact(slices.Sorted(slices.Values(names)))},
			{Name: aws.String("tag:" + TagEKSClusterName), Values: []string{p.clusterName}},
			{Name: aws.String("instance-state-name"), Values: liveStates},
		},
	})
	out := make([]batchResult[*Instance], len(names))
	for i, name := range names {
		if err != nil {
			out[i].err = err
			continue
		}
		for _, inst := range found {
			// A shutting-down instance is an earlier NodeClaim's of the
			// same name on its way out, not this one's; another cluster's
			// may carry the same NodeClaim name.
			if inst.Tags[TagNodeClaim] == name && inst.State != string(ec2types.InstanceStateNameShuttingDown) && isLive(inst) &&
				inst.Tags[TagEKSClusterName] == p.clusterName {
				out[i].value = inst
			}
		}
	}
	return out
}

// terminateIDs terminates a batch of instances in one call; when EC2
// refuses the batch because one ID is unknown, each is retried alone and
// an unknown one counts as terminated.
func (p *Provider) terminateIDs(ctx context.Context, ids []string) []batchResult[struct{}] {
	unique := slices.Compact(slices.Sorted(slices.Values(ids)))
	_, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: unique})
	out := make([]batchResult[struct{}], len(ids))
	if err == nil {
		return out
	}
	if !IsNotFound(err) || len(unique) == 1 {
		for i := range out {
			if !IsNotFound(err) {
				out[i].err = err
			}
		}
		return out
	}
	errs := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range unique {
		wg.Go(func() {
			_, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
			if err != nil && !IsNotFound(err) {
				mu.Lock()
				errs[id] = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		out[i].err = errs[id]
	}
	return out
}

// fromEC2 converts an EC2 instance.
func fromEC2(in *ec2types.Instance) *Instance {
	inst := &Instance{
		ID:         aws.ToString(in.InstanceId),
		Type:       string(in.InstanceType),
		ImageID:    aws.ToString(in.ImageId),
		SubnetID:   aws.ToString(in.SubnetId),
		LaunchTime: aws.ToTime(in.LaunchTime),
		Tags:       map[string]string{},
	}
	if in.Placement != nil {
		inst.Zone = aws.ToString(in.Placement.AvailabilityZone)
		inst.ZoneID = aws.ToString(in.Placement.AvailabilityZoneId)
		inst.Tenancy = string(in.Placement.Tenancy)
		inst.PlacementGroupID = aws.ToString(in.Placement.GroupId)
		inst.PlacementPartition = aws.ToInt32(in.Placement.PartitionNumber)
	}
	if in.State != nil {
		inst.State = string(in.State.Name)
	}
	if inst.Tenancy == "" {
		// EC2 names the tenancy of every instance; default is its default.
		inst.Tenancy = string(ec2types.TenancyDefault)
	}
	inst.CapacityType = "on-demand"
	switch {
	case aws.ToString(in.SpotInstanceRequestId) != "":
		inst.CapacityType = "spot"
	case aws.ToString(in.CapacityReservationId) != "" && in.CapacityReservationSpecification != nil &&
		in.CapacityReservationSpecification.CapacityReservationPreference == ec2types.CapacityReservationPreferenceCapacityReservationsOnly:
		// Launched into a reservation on purpose; an instance that merely
		// landed in an open reservation stays on-demand (upstream's rule).
		inst.CapacityType = "reserved"
		inst.ReservationID = aws.ToString(in.CapacityReservationId)
		inst.ReservationType = string(ec2types.CapacityReservationTypeDefault)
		switch in.InstanceLifecycle {
		case ec2types.InstanceLifecycleTypeCapacityBlock:
			inst.ReservationType = string(ec2types.CapacityReservationTypeCapacityBlock)
		case ec2types.InstanceLifecycleTypeInterruptibleCapacityReservation:
			inst.ReservationInterruptible = true
		}
	}
	for _, g := range in.SecurityGroups {
		inst.SecurityGroupIDs = append(inst.SecurityGroupIDs, aws.ToString(g.GroupId))
	}
	for _, t := range in.Tags {
		inst.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return inst
}

// errNoInstance is returned to callers of a fleet that launched fewer
// instances than it was asked for, with no error naming why.
var errNoInstance = errors.New("fleet returned too few instances")
