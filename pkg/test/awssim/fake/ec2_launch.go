package fake

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/utils/clock"
)

// EC2 error codes the launch fakes return, as EC2 spells them.
const (
	CodeInsufficientInstanceCapacity = "InsufficientInstanceCapacity"
	CodeUnfulfillableCapacity        = "UnfulfillableCapacity"
	CodeMaxSpotInstanceCountExceeded = "MaxSpotInstanceCountExceeded"
	codeLaunchTemplateNameNotFound   = "InvalidLaunchTemplateName.NotFoundException"
	codeLaunchTemplateNameExists     = "InvalidLaunchTemplateName.AlreadyExistsException"
	codeLaunchTemplateIDNotFound     = "InvalidLaunchTemplateId.NotFound"
	codeInstanceIDNotFound           = "InvalidInstanceID.NotFound"
	codeInvalidParameterValue        = "InvalidParameterValue"
)

// CapacityPool is one EC2 capacity pool: an instance type in a zone,
// bought on-demand or as spot.
type CapacityPool struct {
	InstanceType string
	Zone         string
	// CapacityType is "on-demand" or "spot".
	CapacityType string
}

// launchState holds the fake's launch templates, fleets and instances, and
// what the simulated region can still launch.
type launchState struct {
	clock     clock.Clock
	nextID    int
	templates map[string]*launchTemplate // by name
	instances map[string]*instance       // by instance ID
	order     []string                   // instance IDs in launch order
	// fleets remembers instant fleets by client token: a request repeated
	// with the same token returns the first result (EC2 idempotency).
	fleets      map[string]*ec2.CreateFleetOutput
	fleetInputs []*ec2.CreateFleetInput
	// capacity caps how many more instances a pool can launch; pools
	// without an entry are unlimited. poolErrors names the error code a
	// pool at zero capacity reports.
	capacity   map[CapacityPool]int
	poolErrors map[CapacityPool]string
	prices     map[CapacityPool]float64
	pricer     func(CapacityPool) (float64, bool)
	offered    func(instanceType, zone string) bool
	// terminationDelay is how long a terminated instance stays
	// shutting-down before it is terminated.
	terminationDelay time.Duration
}

type launchTemplate struct {
	id      string
	name    string
	data    *ec2types.RequestLaunchTemplateData
	tags    []ec2types.Tag
	created time.Time
}

type instance struct {
	ec2types.Instance
	// shutdownAt is when a shutting-down instance becomes terminated.
	shutdownAt time.Time
}

func (s *launchState) init() {
	if s.templates != nil {
		return
	}
	s.clock = clock.RealClock{}
	s.templates = map[string]*launchTemplate{}
	s.instances = map[string]*instance{}
	s.fleets = map[string]*ec2.CreateFleetOutput{}
	s.capacity = map[CapacityPool]int{}
	s.poolErrors = map[CapacityPool]string{}
	s.prices = map[CapacityPool]float64{}
}

func (s *launchState) id(prefix string) string {
	s.nextID++
	return fmt.Sprintf("%s-%017x", prefix, s.nextID)
}

// launchErr is an AWS-shaped client error.
func launchErr(code, format string, args ...any) error {
	return &smithy.GenericAPIError{Code: code, Message: fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

// SetLaunchClock sets the clock stamping launch and termination times.
func (e *EC2) SetLaunchClock(clk clock.Clock) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	e.launch.clock = clk
}

// SetTerminationDelay makes terminated instances stay shutting-down for d.
func (e *EC2) SetTerminationDelay(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	e.launch.terminationDelay = d
}

// SetCapacity caps how many more instances pool can launch; at zero the
// pool reports code (InsufficientInstanceCapacity when empty) for every
// override that asks for it. A negative n makes the pool unlimited again.
func (e *EC2) SetCapacity(pool CapacityPool, n int, code string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	if n < 0 {
		delete(e.launch.capacity, pool)
		delete(e.launch.poolErrors, pool)
		return
	}
	e.launch.capacity[pool] = n
	if code == "" {
		code = CodeInsufficientInstanceCapacity
	}
	e.launch.poolErrors[pool] = code
}

// SetPrice sets the price a fleet's allocation strategy sees for pool.
func (e *EC2) SetPrice(pool CapacityPool, price float64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	e.launch.prices[pool] = price
}

// SetPricer answers prices of pools SetPrice did not set.
func (e *EC2) SetPricer(pricer func(CapacityPool) (float64, bool)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	e.launch.pricer = pricer
}

// SetOffered restricts launches to the instance types a zone offers; by
// default the catalog's offerings (AddInstanceTypeOfferings) decide, and
// with no catalog every type is offered everywhere.
func (e *EC2) SetOffered(offered func(instanceType, zone string) bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	e.launch.offered = offered
}

// CreateFleetInputs returns the CreateFleet requests received, in order.
func (e *EC2) CreateFleetInputs() []*ec2.CreateFleetInput {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.launch.fleetInputs)
}

// tagsMatch reports whether tags satisfy every tag:<key> and tag-key
// filter; other filters are ignored here.
func tagsMatch(tags []ec2types.Tag, filters []ec2types.Filter) bool {
	for _, f := range filters {
		name := aws.ToString(f.Name)
		switch {
		case name == "tag-key":
			if !slices.ContainsFunc(tags, func(t ec2types.Tag) bool { return slices.Contains(f.Values, aws.ToString(t.Key)) }) {
				return false
			}
		case strings.HasPrefix(name, "tag:"):
			key := strings.TrimPrefix(name, "tag:")
			if !slices.ContainsFunc(tags, func(t ec2types.Tag) bool {
				return aws.ToString(t.Key) == key && slices.Contains(f.Values, aws.ToString(t.Value))
			}) {
				return false
			}
		}
	}
	return true
}

// paginate returns the page of items starting at token (an offset) and the
// token of the next page, if any.
func paginate[T any](items []T, token *string, maxResults *int32) ([]T, *string, error) {
	start := 0
	if token != nil {
		n, err := strconv.Atoi(*token)
		if err != nil || n < 0 || n > len(items) {
			return nil, nil, launchErr(codeInvalidParameterValue, "The token %q is invalid.", *token)
		}
		start = n
	}
	end := len(items)
	if maxResults != nil && *maxResults > 0 && start+int(*maxResults) < end {
		end = start + int(*maxResults)
	}
	if end < len(items) {
		return items[start:end], aws.String(strconv.Itoa(end)), nil
	}
	return items[start:end], nil, nil
}

// CreateFleet launches an instant fleet: for each unit of target capacity
// it picks, among the overrides whose pool can still launch, the cheapest
// (lowest-price for on-demand, price-capacity-optimized for spot, both
// cheapest-first here since the fake's pools are otherwise alike). Pools
// out of capacity are reported in Errors, as EC2 does, without failing
// the call.
func (e *EC2) CreateFleet(_ context.Context, in *ec2.CreateFleetInput, _ ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error) {
	if err := e.enterCall("CreateFleet", in.DryRun); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	if token := aws.ToString(in.ClientToken); token != "" {
		if out, ok := e.launch.fleets[token]; ok {
			return e.fleetAnswer(out), nil
		}
	}
	if in.Type != ec2types.FleetTypeInstant {
		return nil, launchErr(codeInvalidParameterValue, "The fake supports only fleets of type instant, not %q.", in.Type)
	}
	if in.TargetCapacitySpecification == nil || aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity) < 1 {
		return nil, launchErr(codeInvalidParameterValue, "TotalTargetCapacity must be at least 1.")
	}
	e.launch.fleetInputs = append(e.launch.fleetInputs, in)
	offered := e.launch.offered
	if offered == nil && e.catalog.offerings != nil {
		// The catalog's offerings: a type launches only where it is sold.
		offered = func(instanceType, zone string) bool {
			for z := range e.catalog.offerings[instanceType] {
				if z.Name == zone {
					return true
				}
			}
			return false
		}
	}
	out, err := e.launch.fleet(e.withSubnetZones(in), offered, e.reservationCapacity, e)
	if err != nil {
		return nil, err
	}
	if token := aws.ToString(in.ClientToken); token != "" {
		e.launch.fleets[token] = out
	}
	return e.fleetAnswer(out), nil
}

// fleetOverride is one override of a CreateFleet request with its pool.
type fleetOverride struct {
	template *launchTemplate
	spec     *ec2types.FleetLaunchTemplateSpecification
	override ec2types.FleetLaunchTemplateOverridesRequest
	pool     CapacityPool
	price    float64
}

// placer puts a launched instance into its template's placement group and
// says when a spread group refuses one more instance in a zone
// (ec2_placementgroups.go).
type placer interface {
	place(inst *instance, want *ec2types.LaunchTemplatePlacementRequest)
	spreadFull(want *ec2types.LaunchTemplatePlacementRequest, zone string) bool
}

func (s *launchState) fleet(in *ec2.CreateFleetInput, offered func(instanceType, zone string) bool, reserve reserver, groups placer) (*ec2.CreateFleetOutput, error) {
	capacityType := string(in.TargetCapacitySpecification.DefaultTargetCapacityType)
	overrides, err := s.overrides(in, capacityType)
	if err != nil {
		return nil, err
	}
	out := &ec2.CreateFleetOutput{FleetId: aws.String(s.id("fleet"))}
	reported := map[CapacityPool]bool{}
	launched := map[int]*ec2types.CreateFleetInstance{}
	for range aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity) {
		i := s.pick(overrides, offered, reserve, groups, reported, out)
		if i < 0 {
			break
		}
		o := overrides[i]
		inst := s.launchInstance(in, o)
		if o.template.data.Placement != nil {
			groups.place(inst, o.template.data.Placement)
		}
		if n, ok := s.capacity[o.pool]; ok {
			s.capacity[o.pool] = n - 1
		}
		if id := reservationOf(o.template); id != "" {
			reserve(id, o.pool, true)
		}
		if launched[i] == nil {
			launched[i] = &ec2types.CreateFleetInstance{
				InstanceType:               ec2types.InstanceType(o.pool.InstanceType),
				AvailabilityZone:           aws.String(o.pool.Zone),
				SubnetId:                   o.override.SubnetId,
				Lifecycle:                  lifecycleOf(capacityType),
				LaunchTemplateAndOverrides: o.response(),
			}
		}
		launched[i].InstanceIds = append(launched[i].InstanceIds, aws.ToString(inst.InstanceId))
	}
	// Instances are grouped per override, cheapest first.
	for i := range overrides {
		if l := launched[i]; l != nil {
			out.Instances = append(out.Instances, *l)
		}
	}
	return out, nil
}

// overrides resolves every override of the request to its launch template
// and pool, cheapest first, or by priority for a prioritized allocation
// strategy (stable: request order breaks ties).
func (s *launchState) overrides(in *ec2.CreateFleetInput, capacityType string) ([]fleetOverride, error) {
	var out []fleetOverride
	for _, cfg := range in.LaunchTemplateConfigs {
		spec := cfg.LaunchTemplateSpecification
		if spec == nil {
			return nil, launchErr(codeInvalidParameterValue, "LaunchTemplateSpecification is required.")
		}
		var lt *launchTemplate
		for _, t := range s.templates {
			if t.name == aws.ToString(spec.LaunchTemplateName) || t.id == aws.ToString(spec.LaunchTemplateId) {
				lt = t
			}
		}
		if lt == nil {
			return nil, launchErr(codeLaunchTemplateNameNotFound, "The specified launch template, with template name %s, does not exist.", aws.ToString(spec.LaunchTemplateName))
		}
		response := &ec2types.FleetLaunchTemplateSpecification{LaunchTemplateId: aws.String(lt.id), LaunchTemplateName: aws.String(lt.name), Version: spec.Version}
		for _, o := range cfg.Overrides {
			pool := CapacityPool{InstanceType: string(o.InstanceType), Zone: aws.ToString(o.AvailabilityZone), CapacityType: capacityType}
			out = append(out, fleetOverride{template: lt, spec: response, override: o, pool: pool, price: s.price(pool)})
		}
	}
	prioritized := prioritizedFleet(in)
	slices.SortStableFunc(out, func(a, b fleetOverride) int {
		if prioritized {
			if c := cmp.Compare(overridePriority(a), overridePriority(b)); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.price, b.price)
	})
	return out, nil
}

// prioritizedFleet reports whether the fleet's allocation strategy follows
// the overrides' priorities (on-demand prioritized, spot
// capacity-optimized-prioritized) rather than EC2's prices.
func prioritizedFleet(in *ec2.CreateFleetInput) bool {
	if o := in.OnDemandOptions; o != nil && o.AllocationStrategy == ec2types.FleetOnDemandAllocationStrategyPrioritized {
		return true
	}
	o := in.SpotOptions
	return o != nil && o.AllocationStrategy == ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized
}

// overridePriority is the override's priority, the lowest first; one
// without a priority comes last, as in EC2.
func overridePriority(o fleetOverride) float64 {
	if o.override.Priority == nil {
		return math.MaxFloat64
	}
	return *o.override.Priority
}

func (s *launchState) price(pool CapacityPool) float64 {
	if p, ok := s.prices[pool]; ok {
		return p
	}
	if s.pricer != nil {
		if p, ok := s.pricer(pool); ok {
			return p
		}
	}
	return math.MaxFloat64
}

// pick returns the cheapest override whose pool can launch one more
// instance, recording an error for every pool it passes over; -1 if none.
func (s *launchState) pick(overrides []fleetOverride, offered func(string, string) bool, reserve reserver, groups placer,
	reported map[CapacityPool]bool, out *ec2.CreateFleetOutput) int {
	for i, o := range overrides {
		code, message := "", ""
		switch {
		case offered != nil && !offered(o.pool.InstanceType, o.pool.Zone):
			code = "Unsupported"
		case reservationOf(o.template) != "" && !reserve(reservationOf(o.template), o.pool, false):
			code = "ReservationCapacityExceeded"
		case s.capacity[o.pool] <= 0 && s.hasCap(o.pool):
			code = s.poolErrors[o.pool]
		case o.template.data.Placement != nil && groups.spreadFull(o.template.data.Placement, o.pool.Zone):
			code, message = CodeInsufficientInstanceCapacity, spreadLimitMessage
		}
		if code == "" {
			return i
		}
		if message == "" {
			message = poolErrorMessage(code, o.pool)
		}
		if !reported[o.pool] {
			reported[o.pool] = true
			out.Errors = append(out.Errors, ec2types.CreateFleetError{
				ErrorCode:                  aws.String(code),
				ErrorMessage:               aws.String(message),
				Lifecycle:                  lifecycleOf(o.pool.CapacityType),
				LaunchTemplateAndOverrides: o.response(),
			})
		}
	}
	return -1
}

func (s *launchState) hasCap(pool CapacityPool) bool {
	_, ok := s.capacity[pool]
	return ok
}

func poolErrorMessage(code string, pool CapacityPool) string {
	switch code {
	case CodeInsufficientInstanceCapacity:
		return fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s).", pool.InstanceType, pool.Zone)
	case "Unsupported":
		return fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s).", pool.InstanceType, pool.Zone)
	}
	return fmt.Sprintf("There is no %s capacity for %s in %s.", pool.CapacityType, pool.InstanceType, pool.Zone)
}

func (o fleetOverride) response() *ec2types.LaunchTemplateAndOverridesResponse {
	return &ec2types.LaunchTemplateAndOverridesResponse{
		LaunchTemplateSpecification: o.spec,
		Overrides: &ec2types.FleetLaunchTemplateOverrides{
			InstanceType:     o.override.InstanceType,
			SubnetId:         o.override.SubnetId,
			AvailabilityZone: o.override.AvailabilityZone,
			ImageId:          o.override.ImageId,
			Priority:         o.override.Priority,
		},
	}
}

// withSubnetZones returns the request with every override that names a
// subnet but no zone placed in the subnet's zone (the caller's request is
// not changed).
func (e *EC2) withSubnetZones(in *ec2.CreateFleetInput) *ec2.CreateFleetInput {
	out := *in
	out.LaunchTemplateConfigs = make([]ec2types.FleetLaunchTemplateConfigRequest, len(in.LaunchTemplateConfigs))
	for i, cfg := range in.LaunchTemplateConfigs {
		cfg.Overrides = slices.Clone(cfg.Overrides)
		for j, o := range cfg.Overrides {
			if aws.ToString(o.AvailabilityZone) != "" || o.SubnetId == nil {
				continue
			}
			for _, subnet := range e.network.subnets {
				if aws.ToString(subnet.SubnetId) == *o.SubnetId {
					cfg.Overrides[j].AvailabilityZone = subnet.AvailabilityZone
				}
			}
		}
		out.LaunchTemplateConfigs[i] = cfg
	}
	return &out
}

// reserver answers whether capacity reservation id can launch one more
// instance of pool, taking it when take is set.
type reserver func(id string, pool CapacityPool, take bool) bool

// reservationCapacity checks (and with take, consumes) a reservation the
// fake holds: it must be active, for the pool's type and zone, with an
// instance available. A reservation the fake does not hold is unlimited.
func (e *EC2) reservationCapacity(id string, pool CapacityPool, take bool) bool {
	for i := range e.network.reservations {
		r := &e.network.reservations[i]
		if aws.ToString(r.CapacityReservationId) != id {
			continue
		}
		if r.State != ec2types.CapacityReservationStateActive || aws.ToString(r.InstanceType) != pool.InstanceType ||
			aws.ToString(r.AvailabilityZone) != pool.Zone || aws.ToInt32(r.AvailableInstanceCount) < 1 {
			return false
		}
		if take {
			r.AvailableInstanceCount = aws.Int32(aws.ToInt32(r.AvailableInstanceCount) - 1)
		}
		return true
	}
	return true
}
