package aws

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/placementgroup"
)

// Create launches the NodeClaim's instance through CreateFleet over its
// cheapest compatible offerings, and returns the NodeClaim hydrated with
// what was launched. A retry for the same NodeClaim returns the instance
// already launched.
func (c *CloudProvider) Create(ctx context.Context, nodeClaim *karpv1.NodeClaim) (*karpv1.NodeClaim, error) {
	return c.create(ctx, nodeClaim, nil)
}

// CreateFrom is Create choosing among the given instance types (the
// NodePool's with NodeOverlays applied): their prices rank the offerings
// and become the fleet's priorities, and their capacity (extended
// resources an overlay adds) is the NodeClaim's.
func (c *CloudProvider) CreateFrom(ctx context.Context, nodeClaim *karpv1.NodeClaim, types []*cloudprovider.InstanceType) (*karpv1.NodeClaim, error) {
	return c.create(ctx, nodeClaim, types)
}

// create launches from types, or from the EC2NodeClass's own when nil.
func (c *CloudProvider) create(ctx context.Context, nodeClaim *karpv1.NodeClaim, given []*cloudprovider.InstanceType) (*karpv1.NodeClaim, error) {
	// 1. The EC2NodeClass must exist and be Ready for its current spec.
	nodeClass, err := c.readyNodeClass(ctx, nodeClaim)
	if err != nil {
		return nil, err
	}
	tags, err := c.tags(nodeClass, nodeClaim)
	if err != nil {
		return nil, cloudprovider.NewNodeClassNotReadyError(err)
	}
	// 2. The candidates, cheapest first, as every provider ranks them.
	types, candidates := given, []cloudprovider.Launch(nil)
	if types == nil {
		if types, err = c.instanceTypes.List(ctx, nodeClass); err != nil {
			return nil, cloudprovider.NewCreateError(err, ReasonInstanceTypeResolutionFailed, err.Error())
		}
		candidates = c.candidates.get(types, nodeClaim)
	} else {
		// A new list each call: not worth a cache entry.
		candidates = launchCandidates(types, nodeClaim)
	}
	if len(candidates) == 0 {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no available offering satisfies nodeclaim %s", nodeClaim.Name))
	}
	// 3. Launch; a launch template EC2 lost is recreated once.
	inst, err := c.launch(ctx, nodeClass, nodeClaim, candidates, tags)
	if err != nil && isLaunchTemplateNotFound(err) {
		inst, err = c.launch(ctx, nodeClass, nodeClaim, candidates, tags)
	}
	if err != nil {
		return nil, err
	}
	// 4. Hydrate from the instance.
	c.placeLaunched(ctx, nodeClass, nodeClaim, inst)
	var it *cloudprovider.InstanceType
	for _, t := range types {
		if t.Name == inst.Type {
			it = t
		}
	}
	out := hydrate(nodeClaim, inst, it, nodeClaim, zoneID(nodeClass, inst.Zone), c.clock.Now())
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[awsv1.AnnotationEC2NodeClassHash] = nodeClass.Hash()
	out.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = awsv1.EC2NodeClassHashVersion
	out.Annotations[awsv1.AnnotationInstanceProfile] = nodeClass.Status.InstanceProfile
	if _, ok := nodeClaim.Spec.Resources.Requests[awsv1.ResourceEFA]; !ok && len(nodeClass.Spec.NetworkInterfaces) == 0 {
		// As upstream: launched with a plain interface, the instance has
		// no EFA device, whatever its type could hold.
		delete(out.Status.Capacity, awsv1.ResourceEFA)
		delete(out.Status.Allocatable, awsv1.ResourceEFA)
	}
	return out, nil
}

// launch builds the fleet request from the candidates of the cheapest
// candidate's capacity type and hands it to the instance provider.
func (c *CloudProvider) launch(ctx context.Context, nodeClass *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim,
	candidates []cloudprovider.Launch, tags map[string]string) (*instance.Instance, error) {
	capacityType, reservationID := candidates[0].Offering.CapacityType, candidates[0].Offering.ReservationID
	// The cheapest types of that capacity type (and reservation), each
	// with its offerings.
	var types []*cloudprovider.InstanceType
	offerings := map[string][]*cloudprovider.Offering{}
	for _, l := range candidates {
		if l.Offering.CapacityType != capacityType || l.Offering.ReservationID != reservationID {
			continue
		}
		name := l.InstanceType.Name
		if _, ok := offerings[name]; !ok {
			if len(types) == maxInstanceTypes {
				continue
			}
			types = append(types, l.InstanceType)
		}
		offerings[name] = append(offerings[name], l.Offering)
	}
	templates, err := c.launchTemplates.EnsureAll(ctx, launchtemplate.Request{
		NodeClass: nodeClass, NodeClaim: nodeClaim, InstanceTypes: types, CapacityType: capacityType, ReservationID: reservationID, Tags: tags,
	})
	if err != nil {
		return nil, cloudprovider.NewCreateError(err, ReasonLaunchTemplateResolutionFailed, err.Error())
	}
	subnets, release := c.zonalSubnets(nodeClass, types)
	req := instance.LaunchRequest{
		NodeClaimName: nodeClaim.Name,
		NodeClaimUID:  nodeClaim.UID,
		CapacityType:  capacityType,
		ReservationID: reservationID,
		Tags:          tags,
		Tenancy:       string(launchtemplate.Tenancy(nodeClaim)),
		Prioritized:   nodeClaim.Annotations[karpv1.PriceOverlayAppliedAnnotationKey] == "true",
	}
	if g := nodeClass.Status.PlacementGroup; g != nil {
		req.PlacementGroupID = g.ID
		if n := placementgroup.Partition(g, cloudprovider.NodeClaimRequirements(nodeClaim)); n > 0 {
			req.PlacementPartition = strconv.Itoa(int(n))
		}
	}
	if r, ok := capacityreservation.Find(nodeClass.Status.CapacityReservations, reservationID); ok {
		// Capacity blocks and interruptible reservations have fleets of their own.
		req.ReservationType, req.ReservationInterruptible = r.ReservationType, r.Interruptible
	}
	if nodeClass.Spec.Context != nil && nodeClaim.Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey] != "true" {
		// As upstream, a NodeClaim whose minValues were relaxed does not
		// pass the reserved Context on.
		req.Context = *nodeClass.Spec.Context
	}
	req.ZoneIDs = map[string]string{}
	for _, s := range nodeClass.Status.Subnets {
		req.ZoneIDs[s.Zone] = s.ZoneID
	}
	for _, lt := range templates {
		cfg := instance.LaunchTemplateConfig{Name: lt.Name}
		for _, it := range lt.InstanceTypes {
			for _, o := range offerings[it.Name] {
				subnet, ok := subnets[o.Zone]
				if !ok {
					continue
				}
				cfg.Overrides = append(cfg.Overrides, instance.Override{
					InstanceType: it.Name, Zone: o.Zone, SubnetID: subnet, ImageID: lt.ImageID, Price: o.Price,
				})
			}
		}
		req.LaunchTemplates = append(req.LaunchTemplates, cfg)
	}
	if !hasOverrides(req.LaunchTemplates) {
		err := fmt.Errorf("no subnet of %s %s is in a zone nodeclaim %s can launch in", awsv1.Kind, nodeClass.Name, nodeClaim.Name)
		return nil, cloudprovider.NewCreateError(err, ReasonSubnetResolutionFailed, err.Error())
	}
	inst, err := c.instances.Create(ctx, req)
	release(inst)
	if reservationID != "" && c.reservations != nil {
		switch {
		case err == nil:
			c.reservations.MarkLaunched(reservationID, c.clock.Now())
		case cloudprovider.IsInsufficientCapacityError(err):
			// The reservation is full: no more reserved offerings from it
			// until the next listing says otherwise.
			c.reservations.MarkUnavailable(reservationID)
		}
	}
	if isLaunchTemplateNotFound(err) {
		names := make([]string, len(templates))
		for i, lt := range templates {
			names[i] = lt.Name
		}
		c.launchTemplates.Invalidate(names...)
	}
	return inst, err
}

// zonalSubnets returns each zone's launch subnet and a func that gives
// back the addresses predicted for the subnets the launch did not use.
func (c *CloudProvider) zonalSubnets(nodeClass *awsv1.EC2NodeClass, types []*cloudprovider.InstanceType) (map[string]string, func(*instance.Instance)) {
	subnets := map[string]string{}
	if c.subnets == nil {
		for _, z := range nodeClass.ZoneInfo() {
			// status.subnets is sorted by free addresses: the first subnet
			// of a zone has the most.
			subnets[z.Zone] = z.SubnetIDs[0]
		}
		return subnets, func(*instance.Instance) {}
	}
	// A launch takes about as many addresses as the smallest candidate
	// holds pods (VPC CNI assigns each pod one).
	predicted := int64(0)
	for _, it := range types {
		if pods := it.Capacity.Pods().Value(); predicted == 0 || pods < predicted {
			predicted = pods
		}
	}
	var skip func(string) bool
	if u, ok := c.unavailable.(interface{ IsSubnetUnavailable(string) bool }); ok {
		skip = u.IsSubnetUnavailable
	}
	for zone, s := range c.subnets.ZonalSubnetsForLaunch(nodeClass, int32(predicted), skip) {
		subnets[zone] = s.ID
	}
	return subnets, func(inst *instance.Instance) {
		var unused []string
		for _, id := range subnets {
			if inst == nil || id != inst.SubnetID {
				unused = append(unused, id)
			}
		}
		c.subnets.ReleaseIPs(unused, int32(predicted))
	}
}

func hasOverrides(configs []instance.LaunchTemplateConfig) bool {
	for _, cfg := range configs {
		if len(cfg.Overrides) > 0 {
			return true
		}
	}
	return false
}

func isLaunchTemplateNotFound(err error) bool {
	return err != nil && instance.IsNotFound(err)
}

// restrictedTags are the tag keys spec.tags may not set.
var restrictedTags = awsv1.RestrictedTagPatterns

// tags are the tags of everything launched for the NodeClaim: the
// EC2NodeClass's, overlaid with karp's own.
func (c *CloudProvider) tags(nodeClass *awsv1.EC2NodeClass, nodeClaim *karpv1.NodeClaim) (map[string]string, error) {
	for k := range nodeClass.Spec.Tags {
		if matchesAny(restrictedTags, k) {
			return nil, fmt.Errorf("%s %s has the restricted tag %q", awsv1.Kind, nodeClass.Name, k)
		}
	}
	tags := maps.Clone(nodeClass.Spec.Tags)
	if tags == nil {
		tags = map[string]string{}
	}
	tags[awsv1.ClusterTagKey(c.clusterName)] = "owned"
	tags[awsv1.TagEKSClusterName] = c.clusterName
	tags[awsv1.TagNodePool] = nodeClaim.Labels[karpv1.NodePoolLabelKey]
	tags[awsv1.TagNodeClass] = nodeClass.Name
	return tags, nil
}

func matchesAny(patterns []*regexp.Regexp, s string) bool {
	for _, p := range patterns {
		if p.MatchString(s) {
			return true
		}
	}
	return false
}

// candidateCache remembers the launch candidates of NodeClaim shapes (spec
// requirements and requests) per instance-type list: a burst of alike
// NodeClaims ranks the catalog once, so their launches reach the fleet
// batcher together.
type candidateCache struct {
	mu      sync.Mutex
	entries map[candidateKey][]cloudprovider.Launch
}

type candidateKey struct {
	// types is the list's backing array: the instance-type provider
	// returns a new list whenever anything in it changes.
	types *(*cloudprovider.InstanceType)
	n     int
	shape string
}

// maxCandidateEntries bounds the cache; it is emptied when full.
const maxCandidateEntries = 256

func (c *candidateCache) get(types []*cloudprovider.InstanceType, nodeClaim *karpv1.NodeClaim) []cloudprovider.Launch {
	shape, err := json.Marshal(struct {
		Requirements []karpv1.NodeSelectorRequirementWithMinValues
		Requests     corev1.ResourceList
	}{nodeClaim.Spec.Requirements, nodeClaim.Spec.Resources.Requests})
	if err != nil || len(types) == 0 {
		return launchCandidates(types, nodeClaim)
	}
	key := candidateKey{types: &types[0], n: len(types), shape: string(shape)}
	c.mu.Lock()
	if got, ok := c.entries[key]; ok {
		c.mu.Unlock()
		return got
	}
	c.mu.Unlock()
	got := launchCandidates(types, nodeClaim)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxCandidateEntries {
		c.entries = map[candidateKey][]cloudprovider.Launch{}
	}
	c.entries[key] = got
	return got
}

// launchCandidates ranks the offerings as every provider does.
func launchCandidates(types []*cloudprovider.InstanceType, nodeClaim *karpv1.NodeClaim) []cloudprovider.Launch {
	return cloudprovider.LaunchCandidates(types, nodeClaim, nil)
}
