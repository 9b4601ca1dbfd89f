package fake

import (
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

// Instances returns every instance ever launched (terminated ones
// included), in launch order.
func (e *EC2) Instances() []ec2types.Instance {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	out := make([]ec2types.Instance, 0, len(e.launch.order))
	for _, id := range e.launch.order {
		out = append(out, e.launch.instanceView(e.launch.instances[id]))
	}
	return out
}

// LaunchTemplateData returns the data of the named launch template.
func (e *EC2) LaunchTemplateData(name string) (*ec2types.RequestLaunchTemplateData, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	lt, ok := e.launch.templates[name]
	if !ok {
		return nil, false
	}
	return lt.data, true
}

// CreateLaunchTemplate stores a launch template; names are unique.
func (e *EC2) CreateLaunchTemplate(_ context.Context, in *ec2.CreateLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error) {
	if err := e.enterCall("CreateLaunchTemplate", in.DryRun); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	name := aws.ToString(in.LaunchTemplateName)
	if name == "" || in.LaunchTemplateData == nil {
		return nil, launchErr("MissingParameter", "The request must contain the parameters LaunchTemplateName and LaunchTemplateData")
	}
	if _, ok := e.launch.templates[name]; ok {
		return nil, launchErr(codeLaunchTemplateNameExists, "Launch template name already in use.")
	}
	lt := &launchTemplate{id: e.launch.id("lt"), name: name, data: in.LaunchTemplateData, created: e.launch.clock.Now()}
	for _, spec := range in.TagSpecifications {
		if spec.ResourceType == ec2types.ResourceTypeLaunchTemplate {
			lt.tags = append(lt.tags, spec.Tags...)
		}
	}
	e.launch.templates[name] = lt
	return &ec2.CreateLaunchTemplateOutput{LaunchTemplate: lt.describe()}, nil
}

func (lt *launchTemplate) describe() *ec2types.LaunchTemplate {
	return &ec2types.LaunchTemplate{
		LaunchTemplateId:     aws.String(lt.id),
		LaunchTemplateName:   aws.String(lt.name),
		CreateTime:           aws.Time(lt.created),
		DefaultVersionNumber: aws.Int64(1),
		LatestVersionNumber:  aws.Int64(1),
		Tags:                 slices.Clone(lt.tags),
	}
}

// DescribeLaunchTemplates lists launch templates by name, ID and tag
// filters, paginated. An unknown name fails the call, as in EC2.
func (e *EC2) DescribeLaunchTemplates(_ context.Context, in *ec2.DescribeLaunchTemplatesInput, _ ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error) {
	if err := e.enter("DescribeLaunchTemplates"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	in = e.describeLaunchTemplatesInput(in)
	for _, name := range in.LaunchTemplateNames {
		if _, ok := e.launch.templates[name]; !ok {
			return nil, launchErr(codeLaunchTemplateNameNotFound, "At least one of the launch templates specified in the request does not exist.")
		}
	}
	var all []ec2types.LaunchTemplate
	for _, lt := range e.launch.templates {
		if len(in.LaunchTemplateNames) > 0 && !slices.Contains(in.LaunchTemplateNames, lt.name) {
			continue
		}
		if len(in.LaunchTemplateIds) > 0 && !slices.Contains(in.LaunchTemplateIds, lt.id) {
			continue
		}
		if !tagsMatch(lt.tags, in.Filters) {
			continue
		}
		all = append(all, *lt.describe())
	}
	slices.SortFunc(all, func(a, b ec2types.LaunchTemplate) int {
		return strings.Compare(aws.ToString(a.LaunchTemplateId), aws.ToString(b.LaunchTemplateId))
	})
	page, next, err := paginate(all, in.NextToken, in.MaxResults)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeLaunchTemplatesOutput{LaunchTemplates: page, NextToken: next}, nil
}

// DeleteLaunchTemplate deletes a launch template by ID or name.
func (e *EC2) DeleteLaunchTemplate(_ context.Context, in *ec2.DeleteLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error) {
	if err := e.enter("DeleteLaunchTemplate"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	for name, lt := range e.launch.templates {
		if (in.LaunchTemplateId != nil && lt.id == *in.LaunchTemplateId) || (in.LaunchTemplateName != nil && name == *in.LaunchTemplateName) {
			delete(e.launch.templates, name)
			return &ec2.DeleteLaunchTemplateOutput{LaunchTemplate: lt.describe()}, nil
		}
	}
	if in.LaunchTemplateId != nil {
		return nil, launchErr(codeLaunchTemplateIDNotFound, "The specified launch template, with template ID %s, does not exist.", *in.LaunchTemplateId)
	}
	return nil, launchErr(codeLaunchTemplateNameNotFound, "The specified launch template, with template name %s, does not exist.", aws.ToString(in.LaunchTemplateName))
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
// and pool, cheapest first (stable: request order breaks ties).
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
	slices.SortStableFunc(out, func(a, b fleetOverride) int {
		switch {
		case a.price < b.price:
			return -1
		case a.price > b.price:
			return 1
		}
		return 0
	})
	return out, nil
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

// lifecycleOf is the fleet's lifecycle for a capacity type (EC2 leaves
// it empty for on-demand).
func lifecycleOf(capacityType string) ec2types.InstanceLifecycle {
	if capacityType == string(ec2types.DefaultTargetCapacityTypeSpot) {
		return ec2types.InstanceLifecycleSpot
	}
	return ec2types.InstanceLifecycleOnDemand
}

// launchInstance records a running instance launched by the fleet from o.
func (s *launchState) launchInstance(in *ec2.CreateFleetInput, o fleetOverride) *instance {
	data := o.template.data
	inst := &instance{Instance: ec2types.Instance{
		InstanceId:   aws.String(s.id("i")),
		InstanceType: ec2types.InstanceType(o.pool.InstanceType),
		ImageId:      cmpOr(o.override.ImageId, data.ImageId),
		SubnetId:     o.override.SubnetId,
		Placement:    &ec2types.Placement{AvailabilityZone: aws.String(o.pool.Zone), Tenancy: ec2types.TenancyDefault},
		LaunchTime:   aws.Time(s.clock.Now()),
		State:        &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning, Code: aws.Int32(16)},
		ClientToken:  in.ClientToken,
	}}
	if data.Placement != nil && data.Placement.Tenancy != "" {
		inst.Placement.Tenancy = data.Placement.Tenancy
	}
	if o.pool.CapacityType == string(ec2types.DefaultTargetCapacityTypeSpot) {
		inst.SpotInstanceRequestId = aws.String(s.id("sir"))
		inst.InstanceLifecycle = ec2types.InstanceLifecycleTypeSpot
	}
	if id := reservationOf(o.template); id != "" {
		inst.CapacityReservationId = aws.String(id)
		inst.CapacityReservationSpecification = &ec2types.CapacityReservationSpecificationResponse{
			CapacityReservationPreference: data.CapacityReservationSpecification.CapacityReservationPreference,
			CapacityReservationTarget:     &ec2types.CapacityReservationTargetResponse{CapacityReservationId: aws.String(id)},
		}
		inst.InstanceLifecycle = reservedLifecycle(data) // ec2_reservations.go
	}
	if data.IamInstanceProfile != nil {
		inst.IamInstanceProfile = &ec2types.IamInstanceProfile{Arn: data.IamInstanceProfile.Arn, Id: data.IamInstanceProfile.Name}
	}
	groups := slices.Clone(data.SecurityGroupIds)
	for _, ni := range data.NetworkInterfaces {
		groups = append(groups, ni.Groups...)
		// The interfaces the template lays out, with their type (efa,
		// efa-only, interface) and slot, as DescribeInstances lists them.
		inst.NetworkInterfaces = append(inst.NetworkInterfaces, ec2types.InstanceNetworkInterface{
			InterfaceType: ni.InterfaceType, SubnetId: cmpOr(ni.SubnetId, o.override.SubnetId),
			Attachment: &ec2types.InstanceNetworkInterfaceAttachment{NetworkCardIndex: ni.NetworkCardIndex, DeviceIndex: ni.DeviceIndex},
		})
	}
	for _, g := range groups {
		inst.SecurityGroups = append(inst.SecurityGroups, ec2types.GroupIdentifier{GroupId: aws.String(g)})
	}
	for _, spec := range in.TagSpecifications {
		if spec.ResourceType == ec2types.ResourceTypeInstance {
			inst.Tags = upsertTags(inst.Tags, spec.Tags)
		}
	}
	s.instances[aws.ToString(inst.InstanceId)] = inst
	s.order = append(s.order, aws.ToString(inst.InstanceId))
	return inst
}

func cmpOr(a, b *string) *string {
	if aws.ToString(a) != "" {
		return a
	}
	return b
}

func upsertTags(tags, add []ec2types.Tag) []ec2types.Tag {
	for _, t := range add {
		i := slices.IndexFunc(tags, func(have ec2types.Tag) bool { return aws.ToString(have.Key) == aws.ToString(t.Key) })
		if i >= 0 {
			tags[i] = t
		} else {
			tags = append(tags, t)
		}
	}
	return tags
}

// instanceView returns a copy of the instance with its current state.
func (s *launchState) instanceView(inst *instance) ec2types.Instance {
	view := inst.Instance
	view.Tags = slices.Clone(inst.Tags)
	view.SecurityGroups = slices.Clone(inst.SecurityGroups)
	if view.State.Name == ec2types.InstanceStateNameShuttingDown && !s.clock.Now().Before(inst.shutdownAt) {
		view.State = &ec2types.InstanceState{Name: ec2types.InstanceStateNameTerminated, Code: aws.Int32(48)}
	}
	return view
}

// DescribeInstances lists instances by ID and by the filters instance-id,
// instance-state-name, tag:<key> and tag-key, paginated. An unknown ID
// fails the call, as in EC2.
func (e *EC2) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	if err := e.enter("DescribeInstances"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	in = e.describeInstancesInput(in)
	for _, id := range in.InstanceIds {
		if _, ok := e.launch.instances[id]; !ok {
			return nil, launchErr(codeInstanceIDNotFound, "The instance ID '%s' does not exist", id)
		}
	}
	var all []ec2types.Reservation
	for _, id := range e.launch.order {
		view := e.launch.instanceView(e.launch.instances[id])
		if len(in.InstanceIds) > 0 && !slices.Contains(in.InstanceIds, id) {
			continue
		}
		if !instanceMatches(view, in.Filters) {
			continue
		}
		all = append(all, ec2types.Reservation{ReservationId: aws.String("r-" + strings.TrimPrefix(id, "i-")), Instances: []ec2types.Instance{view}})
	}
	page, next, err := paginate(all, in.NextToken, in.MaxResults)
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeInstancesOutput{Reservations: page, NextToken: next}, nil
}

func instanceMatches(inst ec2types.Instance, filters []ec2types.Filter) bool {
	for _, f := range filters {
		switch aws.ToString(f.Name) {
		case "instance-id":
			if !slices.Contains(f.Values, aws.ToString(inst.InstanceId)) {
				return false
			}
		case "instance-state-name":
			if !slices.Contains(f.Values, string(inst.State.Name)) {
				return false
			}
		case "instance-type":
			if !slices.Contains(f.Values, string(inst.InstanceType)) {
				return false
			}
		case "availability-zone":
			if !slices.Contains(f.Values, aws.ToString(inst.Placement.AvailabilityZone)) {
				return false
			}
		}
	}
	return tagsMatch(inst.Tags, filters)
}

// TerminateInstances moves instances to shutting-down; they turn
// terminated after the termination delay. An unknown ID fails the call.
func (e *EC2) TerminateInstances(_ context.Context, in *ec2.TerminateInstancesInput, _ ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	if err := e.enter("TerminateInstances"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	for _, id := range in.InstanceIds {
		if _, ok := e.launch.instances[id]; !ok {
			return nil, launchErr(codeInstanceIDNotFound, "The instance ID '%s' does not exist", id)
		}
	}
	out := &ec2.TerminateInstancesOutput{}
	for _, id := range in.InstanceIds {
		inst := e.launch.instances[id]
		previous := e.launch.instanceView(inst).State
		if previous.Name != ec2types.InstanceStateNameShuttingDown && previous.Name != ec2types.InstanceStateNameTerminated {
			inst.State = &ec2types.InstanceState{Name: ec2types.InstanceStateNameShuttingDown, Code: aws.Int32(32)}
			inst.shutdownAt = e.launch.clock.Now().Add(e.launch.terminationDelay)
		}
		out.TerminatingInstances = append(out.TerminatingInstances, ec2types.InstanceStateChange{
			InstanceId:    aws.String(id),
			PreviousState: previous,
			CurrentState:  e.launch.instanceView(inst).State,
		})
	}
	return out, nil
}

// CreateTags adds or overwrites tags on instances and launch templates.
func (e *EC2) CreateTags(_ context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	if err := e.enter("CreateTags"); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.launch.init()
	for _, id := range in.Resources {
		if strings.HasPrefix(id, "i-") {
			if _, ok := e.launch.instances[id]; !ok {
				return nil, launchErr(codeInstanceIDNotFound, "The instance ID '%s' does not exist", id)
			}
		}
	}
	for _, id := range in.Resources {
		if inst, ok := e.launch.instances[id]; ok {
			inst.Tags = upsertTags(inst.Tags, in.Tags)
			continue
		}
		for _, lt := range e.launch.templates {
			if lt.id == id {
				lt.tags = upsertTags(lt.tags, in.Tags)
			}
		}
	}
	return &ec2.CreateTagsOutput{}, nil
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

// reservationOf is the capacity reservation a launch template targets.
func reservationOf(lt *launchTemplate) string {
	if spec := lt.data.CapacityReservationSpecification; spec != nil && spec.CapacityReservationTarget != nil {
		return aws.ToString(spec.CapacityReservationTarget.CapacityReservationId)
	}
	return ""
}

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
