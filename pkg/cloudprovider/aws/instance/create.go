package instance

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

// Override is one pool a launch may use: an instance type in a zone's
// subnet, booting an AMI.
type Override struct {
	InstanceType string
	Zone         string
	SubnetID     string
	ImageID      string
	// Price is the offering's price; fleets with a prioritized strategy
	// read it as the override's priority.
	Price float64
}

// LaunchTemplateConfig is a launch template and the pools it launches into.
type LaunchTemplateConfig struct {
	Name      string
	Overrides []Override
}

// LaunchRequest is what one NodeClaim's launch needs.
type LaunchRequest struct {
	NodeClaimName string
	NodeClaimUID  types.UID
	// CapacityType is on-demand, spot or reserved; it selects the fleet's
	// capacity type and strategy (reserved launches are on-demand fleets
	// whose launch template targets ReservationID).
	CapacityType  string
	ReservationID string
	// ReservationType (default or capacity-block) and
	// ReservationInterruptible describe ReservationID's reservation: a
	// capacity block and an interruptible reservation are bought through
	// fleets of their own capacity type.
	ReservationType          string
	ReservationInterruptible bool
	LaunchTemplates          []LaunchTemplateConfig
	// Tags go on the fleet, the instance and its volumes. The NodeClaim
	// tag is added to the instance alone, once it is launched, so alike
	// NodeClaims share one CreateFleet call.
	Tags map[string]string
	// Context is CreateFleet's reserved Context parameter, if any.
	Context string
	// Tenancy is the tenancy the launch templates launch with (default or
	// dedicated); the launched instance reports it.
	Tenancy string
	// ZoneIDs maps the zones of the overrides to their zone IDs, for the
	// launch-failure metric.
	ZoneIDs map[string]string
	// PlacementGroupID and PlacementPartition are the placement group the
	// launch templates launch into and the partition they target ("" for
	// none): capacity EC2 refuses there is marked unavailable in that
	// group (and partition) only.
	PlacementGroupID   string
	PlacementPartition string
	// Prioritized launches by the overrides' Price as a priority (the
	// lowest first) instead of by EC2's own prices: set when NodeOverlays
	// changed the prices the NodeClaim was chosen by, as upstream.
	Prioritized bool
}

type fleetItem struct {
	input   *ec2.CreateFleetInput
	uid     types.UID
	zoneIDs map[string]string
	// capacityType and reservationID as karp names them (the fleet's is
	// on-demand for reserved launches).
	capacityType  string
	reservationID string
	// placementGroup and partition scope the offerings EC2 refuses.
	placementGroup, partition string
}

// Create launches the NodeClaim's instance, unless one tagged with the
// NodeClaim already exists (a retry, or a restart after the launch), and
// tags it with the NodeClaim. Offerings EC2 refuses for lack of capacity
// are marked unavailable; when nothing launched because of that, the
// error is an InsufficientCapacityError.
func (p *Provider) Create(ctx context.Context, req LaunchRequest) (*Instance, error) {
	// 1. A retried Create finds the instance launched before.
	if inst := p.remembered(req.NodeClaimUID); inst != nil {
		return inst, nil
	}
	existing, err := p.lookups.Add(ctx, "nodeclaims", req.NodeClaimName)
	if err != nil {
		return nil, fmt.Errorf("looking up the instance of nodeclaim %s: %w", req.NodeClaimName, err)
	}
	if existing != nil {
		if err := p.ensureZone(ctx, existing); err != nil {
			return nil, err
		}
		p.remember(req.NodeClaimUID, existing)
		return existing, nil
	}
	// 2. Launch through a fleet shared with alike requests.
	in := fleetInput(req)
	inst, err := p.fleets.Add(ctx, requestKey(in), fleetItem{input: in, uid: req.NodeClaimUID, zoneIDs: req.ZoneIDs,
		capacityType: req.CapacityType, reservationID: req.ReservationID,
		placementGroup: req.PlacementGroupID, partition: req.PlacementPartition})
	if err != nil {
		return nil, err
	}
	if inst.ReservationID != "" {
		inst.ReservationType, inst.ReservationInterruptible = req.ReservationType, req.ReservationInterruptible
	}
	if inst.Tenancy == "" {
		// CreateFleet's answer does not say; the launch templates set it.
		inst.Tenancy = req.Tenancy
	}
	// 3. Tie the instance to the NodeClaim before anyone records it.
	if err := p.tagNodeClaim(ctx, inst, req.NodeClaimName); err != nil {
		return nil, err
	}
	// 4. Never hand out an instance without its zone: its providerID
	// would lack it, and nothing keyed by zone would see the node.
	if err := p.ensureZone(ctx, inst); err != nil {
		return nil, err
	}
	p.remember(req.NodeClaimUID, inst)
	return inst, nil
}

// ensureZone fills in the zone (and subnet) of an instance whose launch
// answer did not name it, from DescribeInstances. When EC2 names no zone
// there either, the instance is left running and the launch fails: it is
// tagged with the cluster, NodePool and NodeClaim, so a retried Create of
// the NodeClaim finds it by that tag (and asks again), and if the NodeClaim
// goes away the leaked-instance collector, which checks those tags before
// terminating, reclaims it. Terminating it here instead would act on an ID
// EC2 could not describe to us.
func (p *Provider) ensureZone(ctx context.Context, inst *Instance) error {
	if inst.Zone != "" {
		return nil
	}
	described, err := p.Get(ctx, inst.ID)
	if err != nil {
		return fmt.Errorf("describing instance %s for its zone, which the launch answer lacks: %w", inst.ID, err)
	}
	if described.Zone == "" {
		return fmt.Errorf("instance %s has no availability zone in the CreateFleet answer, its fleet override or DescribeInstances; "+
			"it is left tagged for this cluster and NodeClaim", inst.ID)
	}
	inst.Zone = described.Zone
	if inst.SubnetID == "" {
		inst.SubnetID = described.SubnetID
	}
	return nil
}

func (p *Provider) remembered(uid types.UID) *Instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.launched[uid]
}

func (p *Provider) remember(uid types.UID, inst *Instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.launched[uid] = inst
}

// Forget drops what the provider remembers about a NodeClaim's launch.
func (p *Provider) Forget(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.launched, uid)
}

// tagNodeClaim tags the instance with its NodeClaim. An instance that
// cannot be tagged is terminated: untagged, a retried Create could not
// find it and would launch a second one.
func (p *Provider) tagNodeClaim(ctx context.Context, inst *Instance, name string) error {
	in := &ec2.CreateTagsInput{Resources: []string{inst.ID}, Tags: []ec2types.Tag{{Key: aws.String(TagNodeClaim), Value: aws.String(name)}}}
	var err error
	for range 3 {
		if _, err = p.ec2.CreateTags(ctx, in); err == nil {
			inst.Tags[TagNodeClaim] = name
			return nil
		}
	}
	if _, terr := p.terminate.Add(ctx, "terminate", inst.ID); terr != nil {
		err = errors.Join(err, fmt.Errorf("terminating the untagged instance %s: %w", inst.ID, terr))
	}
	return fmt.Errorf("tagging instance %s with nodeclaim %s: %w", inst.ID, name, err)
}

// fleetInput builds the CreateFleet request for one NodeClaim (target
// capacity 1; the batcher raises it to the batch size).
func fleetInput(req LaunchRequest) *ec2.CreateFleetInput {
	in := &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: fleetCapacityType(req),
		},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: ec2Tags(req.Tags)},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: ec2Tags(req.Tags)},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: ec2Tags(req.Tags)},
		},
	}
	switch fleetCapacityType(req) {
	case ec2types.DefaultTargetCapacityTypeSpot:
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
		if req.Prioritized {
			in.SpotOptions.AllocationStrategy = ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized
		}
	case ec2types.DefaultTargetCapacityTypeReservedCapacity:
		in.ReservedCapacityOptions = &ec2types.ReservedCapacityOptionsRequest{
			ReservationTypes: []ec2types.FleetReservationType{ec2types.FleetReservationTypeInterruptibleCapacityReservation},
		}
	case ec2types.DefaultTargetCapacityTypeCapacityBlock:
		// A capacity block takes no allocation strategy.
	default:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
		if req.Prioritized {
			in.OnDemandOptions.AllocationStrategy = ec2types.FleetOnDemandAllocationStrategyPrioritized
		}
	}
	if req.Context != "" {
		in.Context = aws.String(req.Context)
	}
	for _, lt := range req.LaunchTemplates {
		cfg := ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
				LaunchTemplateName: aws.String(lt.Name),
				Version:            aws.String("$Latest"),
			},
		}
		for _, o := range lt.Overrides {
			cfg.Overrides = append(cfg.Overrides, ec2types.FleetLaunchTemplateOverridesRequest{
				InstanceType:     ec2types.InstanceType(o.InstanceType),
				SubnetId:         aws.String(o.SubnetID),
				AvailabilityZone: aws.String(o.Zone),
				ImageId:          aws.String(o.ImageID),
				Priority:         aws.Float64(o.Price),
			})
		}
		if len(cfg.Overrides) > 0 {
			in.LaunchTemplateConfigs = append(in.LaunchTemplateConfigs, cfg)
		}
	}
	return in
}

// fleetCapacityType is the fleet's target capacity type (upstream's): a
// capacity block is bought as capacity-block and an interruptible
// reservation as reserved-capacity; other reserved capacity is bought as
// on-demand through the launch template's reservation target.
func fleetCapacityType(req LaunchRequest) ec2types.DefaultTargetCapacityType {
	if req.CapacityType != karpv1.CapacityTypeReserved {
		return ec2types.DefaultTargetCapacityType(req.CapacityType)
	}
	switch {
	case req.ReservationType == string(ec2types.CapacityReservationTypeCapacityBlock):
		return ec2types.DefaultTargetCapacityTypeCapacityBlock
	case req.ReservationInterruptible:
		return ec2types.DefaultTargetCapacityTypeReservedCapacity
	}
	return ec2types.DefaultTargetCapacityTypeOnDemand
}

// ec2Tags converts tags, sorted by key so alike requests are equal.
func ec2Tags(tags map[string]string) []ec2types.Tag {
	out := make([]ec2types.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

// requestKey identifies a request by its content: identical requests
// share a batch.
func requestKey(in *ec2.CreateFleetInput) string {
	raw, err := json.Marshal(in)
	if err != nil {
		// Every field is plain data; Marshal cannot fail on it.
		panic(fmt.Sprintf("encoding a CreateFleet request: %v", err))
	}
	h := fnv.New128a()
	_, _ = h.Write(raw)
	return hex.EncodeToString(h.Sum(nil))
}

// clientToken makes a batch's CreateFleet idempotent: the same NodeClaims
// asking for the same thing again (a retry after a lost response) get the
// fleet EC2 already launched instead of a second one.
func clientToken(key string, items []fleetItem) string {
	uids := make([]string, len(items))
	for i, it := range items {
		uids[i] = string(it.uid)
	}
	slices.Sort(uids)
	h := fnv.New128a()
	_, _ = h.Write([]byte(key + "/" + strings.Join(uids, ",")))
	return hex.EncodeToString(h.Sum(nil))
}

// createFleet executes one batch: one CreateFleet with the batch's size as
// target capacity; instances are handed out one per caller in order.
func (p *Provider) createFleet(ctx context.Context, items []fleetItem) []batchResult[*Instance] {
	out := make([]batchResult[*Instance], len(items))
	in := *items[0].input
	target := *in.TargetCapacitySpecification
	target.TotalTargetCapacity = aws.Int32(int32(len(items)))
	in.TargetCapacitySpecification = &target
	in.ClientToken = aws.String(clientToken(requestKey(items[0].input), items))
	capacityType := items[0].capacityType

	resp, err := p.ec2.CreateFleet(ctx, &in)
	if err != nil {
		cerr := cloudprovider.NewCreateError(fmt.Errorf("creating fleet: %w", err), ReasonFor(err.Error()), err.Error())
		for i := range out {
			out[i].err = cerr
		}
		return out
	}
	zones := subnetZones(&in)
	for _, e := range resp.Errors {
		if lto := e.LaunchTemplateAndOverrides; lto != nil && lto.Overrides != nil {
			zone := overrideZone(lto.Overrides, zones)
			LaunchFailuresTotal.WithLabelValues(zone, items[0].zoneIDs[zone], capacityType, aws.ToString(e.ErrorCode)).Inc()
		}
	}
	refused := p.markUnavailable(ctx, resp, &in, items[0], zones)
	launched := p.fleetInstances(resp, &in, capacityType, zones)
	for _, inst := range launched {
		inst.ReservationID = items[0].reservationID
	}
	for i := range out {
		if i < len(launched) {
			out[i].value = launched[i]
			continue
		}
		out[i].err = noInstanceError(resp.Errors, refused)
	}
	if extra := launched[min(len(launched), len(items)):]; len(extra) > 0 {
		log.FromContext(ctx).Info("fleet launched more instances than requested, terminating the extras", "count", len(extra))
		ids := make([]string, len(extra))
		for i, inst := range extra {
			ids[i] = inst.ID
		}
		if _, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids}); err != nil {
			log.FromContext(ctx).Error(err, "terminating extra fleet instances", "instances", ids)
		}
	}
	return out
}

// subnetZones maps the subnet of each override of the request to the
// override's zone: the zones of the EC2NodeClass's resolved subnets that
// the launch offered.
func subnetZones(in *ec2.CreateFleetInput) map[string]string {
	out := map[string]string{}
	for _, cfg := range in.LaunchTemplateConfigs {
		for _, o := range cfg.Overrides {
			if subnet, zone := aws.ToString(o.SubnetId), aws.ToString(o.AvailabilityZone); subnet != "" && zone != "" {
				out[subnet] = zone
			}
		}
	}
	return out
}

// overrideZone is the zone of a fleet override in an answer: named, or
// that of the subnet it names.
func overrideZone(o *ec2types.FleetLaunchTemplateOverrides, subnetZones map[string]string) string {
	if o == nil {
		return ""
	}
	return cmp.Or(aws.ToString(o.AvailabilityZone), subnetZones[aws.ToString(o.SubnetId)])
}

// fleetInstances lists the instances a fleet launched, cheapest pools
// first as EC2 reports them. Each instance's zone and subnet are the
// answer's per-instance fields, else those of the override that produced
// it (its subnet mapped to its zone when the override names no zone);
// Create asks DescribeInstances when neither says.
func (p *Provider) fleetInstances(resp *ec2.CreateFleetOutput, in *ec2.CreateFleetInput, capacityType string, subnetZones map[string]string) []*Instance {
	var out []*Instance
	now := p.clock.Now()
	for _, fi := range resp.Instances {
		var imageID, overrideSubnet, zoneOfOverride string
		if lto := fi.LaunchTemplateAndOverrides; lto != nil && lto.Overrides != nil {
			imageID = aws.ToString(lto.Overrides.ImageId)
			overrideSubnet = aws.ToString(lto.Overrides.SubnetId)
			zoneOfOverride = overrideZone(lto.Overrides, subnetZones)
		}
		for _, id := range fi.InstanceIds {
			inst := &Instance{
				ID:           id,
				Type:         string(fi.InstanceType),
				Zone:         cmp.Or(aws.ToString(fi.AvailabilityZone), zoneOfOverride),
				SubnetID:     cmp.Or(aws.ToString(fi.SubnetId), overrideSubnet),
				ImageID:      imageID,
				CapacityType: capacityType,
				State:        string(ec2types.InstanceStateNamePending),
				LaunchTime:   now,
				Tags:         map[string]string{},
			}
			for _, spec := range in.TagSpecifications {
				if spec.ResourceType == ec2types.ResourceTypeInstance {
					for _, t := range spec.Tags {
						inst.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
					}
				}
			}
			out = append(out, inst)
		}
	}
	return out
}

// markUnavailable puts every pool the fleet refused for lack of capacity
// into the unavailable-offerings cache and returns their keys. A launch
// into a placement group marks the pools inside that group (and the
// partition it targeted) only, as upstream: a full group says nothing of
// the same type and zone outside it. A spread group's per-zone instance
// limit takes every type the request offered in that zone out of the
// group, since the limit is the group's, not the type's.
func (p *Provider) markUnavailable(ctx context.Context, resp *ec2.CreateFleetOutput, in *ec2.CreateFleetInput, item fleetItem,
	subnetZones map[string]string) []cloudprovider.OfferingKey {
	capacityType := item.capacityType
	var refused []cloudprovider.OfferingKey
	markedType := false
	for _, e := range resp.Errors {
		code := aws.ToString(e.ErrorCode)
		if code == serviceLinkedRoleCode {
			// Without the spot service-linked role no spot launch can
			// succeed: the whole capacity type is unavailable for a while.
			if m, ok := p.unavailable.(capacityTypeMarker); ok && !markedType {
				m.MarkCapacityTypeUnavailable(ctx, code, capacityType)
				markedType = true
			}
			continue
		}
		if !IsUnfulfillableCapacity(code) || e.LaunchTemplateAndOverrides == nil || e.LaunchTemplateAndOverrides.Overrides == nil {
			continue
		}
		o := e.LaunchTemplateAndOverrides.Overrides
		zone := overrideZone(o, subnetZones)
		spreadLimit := isSpreadPlacementGroupLimit(e)
		if capacityType == karpv1.CapacityTypeReserved {
			// A full reservation is the reservation's business, not the
			// offering cache's (upstream's rule); the caller marks it. A
			// spread group's limit says nothing of the reservation.
			key := cloudprovider.OfferingKey{InstanceType: string(o.InstanceType), Zone: zone, CapacityType: capacityType}
			if !spreadLimit && !slices.Contains(refused, key) {
				refused = append(refused, key)
			}
			continue
		}
		if m, ok := p.unavailable.(subnetMarker); ok && code == "InsufficientFreeAddressesInSubnet" && aws.ToString(o.SubnetId) != "" {
			m.MarkSubnetUnavailable(ctx, code, aws.ToString(o.SubnetId))
		}
		key := cloudprovider.OfferingKey{InstanceType: string(o.InstanceType), Zone: zone, CapacityType: capacityType}
		if slices.Contains(refused, key) {
			continue
		}
		refused = append(refused, key)
		if p.unavailable == nil {
			continue
		}
		groups, inGroup := p.unavailable.(placementGroupMarker)
		switch {
		case item.placementGroup == "" || !inGroup:
			p.unavailable.MarkUnavailable(ctx, code, key.InstanceType, key.Zone, key.CapacityType)
		case spreadLimit:
			for _, t := range overrideTypes(in, zone) {
				groups.MarkUnavailableInPlacementGroup(ctx, code, t, zone, capacityType, item.placementGroup, "")
			}
		default:
			groups.MarkUnavailableInPlacementGroup(ctx, code, key.InstanceType, key.Zone, key.CapacityType, item.placementGroup, item.partition)
		}
	}
	return refused
}

// isSpreadPlacementGroupLimit reports whether EC2 refused the pool because
// a spread placement group holds as many instances in the zone as it may
// (seven per zone); EC2 says so in the message only.
func isSpreadPlacementGroupLimit(e ec2types.CreateFleetError) bool {
	return strings.Contains(aws.ToString(e.ErrorMessage), "limit of instances in this spread placement group")
}

// overrideTypes lists the instance types the request offered in zone
// (fleetInput names every override's zone).
func overrideTypes(in *ec2.CreateFleetInput, zone string) []string {
	var out []string
	for _, cfg := range in.LaunchTemplateConfigs {
		for _, o := range cfg.Overrides {
			if aws.ToString(o.AvailabilityZone) == zone && !slices.Contains(out, string(o.InstanceType)) {
				out = append(out, string(o.InstanceType))
			}
		}
	}
	return out
}

// noInstanceError explains why a caller got no instance: insufficient
// capacity when every error says so, else the first other error.
func noInstanceError(fleetErrors []ec2types.CreateFleetError, refused []cloudprovider.OfferingKey) error {
	if len(fleetErrors) == 0 {
		return cloudprovider.NewCreateError(errNoInstance, ReasonLaunchFailed, errNoInstance.Error())
	}
	var messages []string
	allCapacity := true
	for _, e := range fleetErrors {
		code := aws.ToString(e.ErrorCode)
		msg := code + ": " + aws.ToString(e.ErrorMessage)
		if !slices.Contains(messages, msg) {
			messages = append(messages, msg)
		}
		if !IsUnfulfillableCapacity(code) && code != serviceLinkedRoleCode {
			allCapacity = false
		}
	}
	slices.SortFunc(messages, func(a, b string) int { return cmp.Compare(a, b) })
	err := fmt.Errorf("creating fleet: %s", strings.Join(messages, "; "))
	if allCapacity {
		return cloudprovider.NewInsufficientCapacityError(err, refused...)
	}
	return cloudprovider.NewCreateError(err, ReasonFor(err.Error()), err.Error())
}
