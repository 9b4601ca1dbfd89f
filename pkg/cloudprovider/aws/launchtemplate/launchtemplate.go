package launchtemplate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/userdata"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// NamePrefix starts the name of every launch template karp creates.
const NamePrefix = "karpenter.k8s.aws/"

// TTL is how long an unused launch template is kept: each use refreshes
// it, and GC deletes the ones not used for that long.
const TTL = time.Minute

// EC2 error codes the provider tells apart.
const (
	codeNameNotFound = "InvalidLaunchTemplateName.NotFoundException"
	codeNameExists   = "InvalidLaunchTemplateName.AlreadyExistsException"
	codeIDNotFound   = "InvalidLaunchTemplateId.NotFound"
)

type ec2API interface {
	CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, optFns ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, optFns ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
}

// Options are the cluster facts every launch template's user data needs.
type Options struct {
	ClusterName     string
	ClusterEndpoint string
	// CABundle is the base64 cluster CA bundle.
	CABundle     string
	ClusterCIDR  string
	ClusterDNSIP string
}

// LaunchTemplate is a launch template and the instance types it launches.
type LaunchTemplate struct {
	Name          string
	ImageID       string
	InstanceTypes []*cloudprovider.InstanceType
}

// Request is one launch's input to EnsureAll.
type Request struct {
	NodeClass     *awsv1.EC2NodeClass
	NodeClaim     *karpv1.NodeClaim
	InstanceTypes []*cloudprovider.InstanceType
	CapacityType  string
	// ReservationID, for reserved launches, is the capacity reservation
	// the template launches into (and only into).
	ReservationID string
	// Tags go on the launch template and the network interfaces it makes.
	Tags map[string]string
}

// Provider creates, reuses and garbage-collects launch templates.
type Provider struct {
	ec2   ec2API
	clock clock.PassiveClock
	opts  Options

	mu sync.Mutex
	// known maps the name of each launch template karp uses to its ID and
	// when it was last used.
	known map[string]*entry
	// making holds the names being described or created; concurrent
	// launches wait for the first instead of racing it.
	making map[string]chan struct{}
}

type entry struct {
	id       string
	lastUsed time.Time
}

// NewProvider builds the provider.
func NewProvider(api ec2API, clk clock.PassiveClock, opts Options) *Provider {
	return &Provider{ec2: api, clock: clk, opts: opts, known: map[string]*entry{}, making: map[string]chan struct{}{}}
}

// EnsureAll returns the launch templates the request's instance types
// launch with, creating those that do not exist: one per AMI and pods
// capacity (the user data names max pods), the rest of the parameters
// coming from the EC2NodeClass.
func (p *Provider) EnsureAll(ctx context.Context, req Request) ([]*LaunchTemplate, error) {
	nodeClass := req.NodeClass
	if len(nodeClass.Status.AMIs) == 0 {
		return nil, errors.New("resolving launch templates: no amis in the EC2NodeClass status")
	}
	if len(nodeClass.Status.SecurityGroups) == 0 {
		return nil, errors.New("resolving launch templates: no security groups in the EC2NodeClass status")
	}
	// Types differ in their templates by AMI, pods (the user data names
	// max pods) and EFA interfaces (one per EFA the type has, when the
	// NodeClaim asks for EFA).
	type group struct {
		imageID string
		pods    int64
		efa     int64
	}
	var out []*LaunchTemplate
	index := map[group]int{}
	for _, it := range req.InstanceTypes {
		ami, ok := AMIFor(nodeClass.Status.AMIs, it)
		if !ok {
			continue
		}
		g := group{imageID: ami.ID, pods: it.Capacity.Pods().Value(), efa: efaCount(req.NodeClaim, it)}
		i, ok := index[g]
		if !ok {
			// Everything else in the template comes from the request, so
			// the group's first type renders it for all.
			data, err := p.data(req, g.imageID, int32(g.pods))
			if err != nil {
				return nil, err
			}
			if g.efa > 0 && len(nodeClass.Spec.NetworkInterfaces) == 0 {
				data.NetworkInterfaces = efaInterfaces(data.NetworkInterfaces[0], int32(g.efa))
			}
			name := Name(data, req.Tags)
			if err := p.ensure(ctx, name, nodeClass.Name, data, req.Tags); err != nil {
				return nil, err
			}
			i = len(out)
			index[g] = i
			out = append(out, &LaunchTemplate{Name: name, ImageID: g.imageID})
		}
		out[i].InstanceTypes = append(out[i].InstanceTypes, it)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("resolving launch templates: no instance type satisfies the requirements of amis %v", amiIDs(nodeClass.Status.AMIs))
	}
	return out, nil
}

func amiIDs(amis []awsv1.AMI) []string {
	out := make([]string, len(amis))
	for i, a := range amis {
		out[i] = a.ID
	}
	return out
}

// AMIFor returns the first AMI (status order: newest first) whose
// requirements the instance type meets.
func AMIFor(amis []awsv1.AMI, it *cloudprovider.InstanceType) (awsv1.AMI, bool) {
	for _, ami := range amis {
		if it.Requirements.StrictlyCompatible(scheduling.NewNodeSelectorRequirements(ami.Requirements...)) == nil {
			return ami, true
		}
	}
	return awsv1.AMI{}, false
}

// Name is the launch template's name: a hash of everything it holds, so
// identical templates are shared and any change makes a new one.
func Name(data *ec2types.RequestLaunchTemplateData, tags map[string]string) string {
	raw, err := json.Marshal(struct {
		Data *ec2types.RequestLaunchTemplateData
		Tags map[string]string
	}{data, tags})
	if err != nil {
		// Plain data only; Marshal cannot fail on it.
		panic(fmt.Sprintf("encoding launch template data: %v", err))
	}
	h := fnv.New64a()
	_, _ = h.Write(raw)
	return NamePrefix + strconv.FormatUint(h.Sum64(), 10)
}

// data builds the launch template's contents.
func (p *Provider) data(req Request, imageID string, maxPods int32) (*ec2types.RequestLaunchTemplateData, error) {
	nodeClass, nodeClaim := req.NodeClass, req.NodeClaim
	family := nodeClass.AMIFamily()
	rendered, err := userdata.Render(family, userdata.Options{
		ClusterName:         p.opts.ClusterName,
		ClusterEndpoint:     p.opts.ClusterEndpoint,
		CABundle:            p.opts.CABundle,
		ClusterCIDR:         p.opts.ClusterCIDR,
		ClusterDNSIP:        p.opts.ClusterDNSIP,
		MaxPods:             &maxPods,
		Kubelet:             nodeClass.Spec.Kubelet,
		UserData:            nodeClass.Spec.UserData,
		Labels:              userDataLabels(nodeClaim, req.CapacityType, family),
		Taints:              append(slices.Clone(nodeClaim.Spec.Taints), nodeClaim.Spec.StartupTaints...),
		InstanceStorePolicy: nodeClass.Spec.InstanceStorePolicy,
		BottlerocketVersion: bottlerocketVersion(nodeClass),
	})
	if err != nil {
		return nil, fmt.Errorf("rendering user data: %w", err)
	}
	groups := make([]string, len(nodeClass.Status.SecurityGroups))
	for i, sg := range nodeClass.Status.SecurityGroups {
		groups[i] = sg.ID
	}
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:             aws.String(imageID),
		UserData:            aws.String(base64.StdEncoding.EncodeToString([]byte(rendered))),
		BlockDeviceMappings: blockDevices(nodeClass),
		MetadataOptions:     metadataOptions(nodeClass.Spec.MetadataOptions),
		Monitoring:          &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(aws.ToBool(nodeClass.Spec.DetailedMonitoring))},
		NetworkInterfaces:   networkInterfaces(nodeClass, groups),
		CpuOptions:          cpuOptions(nodeClass.Spec.CPUOptions),
		Placement:           placement(nodeClass, nodeClaim),
		CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceNone,
		},
		TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{
			{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: ec2Tags(req.Tags)},
		},
	}
	if req.ReservationID != "" {
		data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
			CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(req.ReservationID)},
		}
		data.InstanceMarketOptions = marketOptions(nodeClass, req.ReservationID)
	}
	if nodeClass.Status.InstanceProfile != "" {
		data.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(nodeClass.Status.InstanceProfile)}
	}
	if req.CapacityType == karpv1.CapacityTypeSpot {
		data.TagSpecifications = append(data.TagSpecifications,
			ec2types.LaunchTemplateTagSpecificationRequest{ResourceType: ec2types.ResourceTypeSpotInstancesRequest, Tags: ec2Tags(req.Tags)})
	}
	return data, nil
}

// networkInterfaces lays out the instance's interfaces: one primary
// interface by default, or the EC2NodeClass's explicit layout. Security
// groups go on the interfaces (so the template sets none of its own);
// EFA-only devices get no addresses.
func networkInterfaces(nodeClass *awsv1.EC2NodeClass, groups []string) []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
	primary := func(card, device int32) ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
		return ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			NetworkCardIndex:         aws.Int32(card),
			DeviceIndex:              aws.Int32(device),
			AssociatePublicIpAddress: nodeClass.Spec.AssociatePublicIPAddress,
			Groups:                   groups,
			Ipv4PrefixCount:          nodeClass.Spec.IPPrefixCount,
			// EFA interfaces laid out for the NodeClaim copy it too.
			ConnectionTrackingSpecification: connectionTracking(nodeClass.Spec.ConnectionTracking),
		}
	}
	if len(nodeClass.Spec.NetworkInterfaces) == 0 {
		eni := primary(0, 0)
		eni.NetworkCardIndex = nil
		return []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{eni}
	}
	var out []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest
	for _, ni := range nodeClass.Spec.NetworkInterfaces {
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			out = append(out, ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
				NetworkCardIndex: aws.Int32(ni.NetworkCardIndex),
				DeviceIndex:      aws.Int32(ni.DeviceIndex),
				InterfaceType:    aws.String(string(awsv1.InterfaceTypeEFAOnly)),
				Groups:           groups,
			})
			continue
		}
		eni := primary(ni.NetworkCardIndex, ni.DeviceIndex)
		eni.InterfaceType = aws.String(string(ni.InterfaceType))
		out = append(out, eni)
	}
	return out
}

// connectionTracking is the EC2NodeClass's connection tracking timeouts
// for an interface that has addresses (EFA-only devices take none), or nil
// when it sets none.
func connectionTracking(ct *awsv1.ConnectionTracking) *ec2types.ConnectionTrackingSpecificationRequest {
	if ct == nil || (ct.TCPEstablishedTimeout == nil && ct.UDPStreamTimeout == nil && ct.UDPTimeout == nil) {
		return nil
	}
	return &ec2types.ConnectionTrackingSpecificationRequest{
		TcpEstablishedTimeout: ct.TCPEstablishedTimeout,
		UdpStreamTimeout:      ct.UDPStreamTimeout,
		UdpTimeout:            ct.UDPTimeout,
	}
}

// cpuOptions sends the EC2NodeClass's nested virtualization setting as
// written ("enabled" or "disabled"), or nothing when it has none.
func cpuOptions(o *awsv1.CPUOptions) *ec2types.LaunchTemplateCpuOptionsRequest {
	if o == nil || o.NestedVirtualization == nil {
		return nil
	}
	return &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecification(*o.NestedVirtualization)}
}

// marketOptions are the market a reserved launch buys from: EC2 launches
// into a capacity block only with the capacity-block market type, and
// into an interruptible reservation only with its own; other reservations
// are on-demand capacity and name none. The reservation's kind comes from
// the EC2NodeClass's status, which the offering was built from.
func marketOptions(nodeClass *awsv1.EC2NodeClass, reservationID string) *ec2types.LaunchTemplateInstanceMarketOptionsRequest {
	r, ok := capacityreservation.Find(nodeClass.Status.CapacityReservations, reservationID)
	switch {
	case !ok:
		return nil
	case r.ReservationType == awsv1.CapacityReservationTypeCapacityBlock:
		return &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
	case r.Interruptible:
		return &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeInterruptibleCapacityReservation}
	}
	return nil
}

// efaCount is how many EFA interfaces the type launches with for the
// NodeClaim: all it has (its vpc.amazonaws.com/efa capacity) when the
// NodeClaim's pods request EFA, else none (upstream's rule; without the
// request an EFA-capable type launches with a plain interface).
func efaCount(nodeClaim *karpv1.NodeClaim, it *cloudprovider.InstanceType) int64 {
	if _, ok := nodeClaim.Spec.Resources.Requests[awsv1.ResourceEFA]; !ok {
		return 0
	}
	efa := it.Capacity[awsv1.ResourceEFA]
	return efa.Value()
}

// efaInterfaces lays out n EFA interfaces, one per network card, each
// otherwise like the primary interface: the first is the primary (card 0,
// device 0) and the others device 1 of their card, so card 0's interface
// ranks first, which an instance with a public address but no Elastic IP
// per card needs (upstream's layout).
func efaInterfaces(primary ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, n int32) []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest {
	out := make([]ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest, n)
	for i := range n {
		eni := primary
		eni.Groups = slices.Clone(primary.Groups)
		eni.NetworkCardIndex = aws.Int32(i)
		eni.DeviceIndex = aws.Int32(min(i, 1))
		eni.InterfaceType = aws.String(string(ec2types.NetworkInterfaceTypeEfa))
		out[i] = eni
	}
	return out
}

// userDataLabels are the labels the node registers with: the NodeClaim's,
// its single-valued requirements and the capacity type; karp syncs the
// taints itself on every family but Custom.
func userDataLabels(nodeClaim *karpv1.NodeClaim, capacityType, family string) map[string]string {
	labels := maps.Clone(nodeClaim.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, cloudprovider.NodeClaimRequirements(nodeClaim).Labels())
	labels[karpv1.CapacityTypeLabelKey] = capacityType
	if family != awsv1.AMIFamilyCustom {
		labels[karpv1.NodeDoNotSyncTaintsLabelKey] = "true"
	}
	return labels
}

// bottlerocketVersion is the release named by a Bottlerocket alias.
func bottlerocketVersion(nodeClass *awsv1.EC2NodeClass) string {
	if alias := nodeClass.Alias(); alias != nil && alias.Family == awsv1.AMIFamilyBottlerocket {
		return alias.Version
	}
	return ""
}

func ec2Tags(tags map[string]string) []ec2types.Tag {
	out := make([]ec2types.Tag, 0, len(tags))
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

// ensure makes sure the named launch template exists: known and used
// recently, else described, else created.
func (p *Provider) ensure(ctx context.Context, name, nodeClassName string, data *ec2types.RequestLaunchTemplateData, tags map[string]string) error {
	for {
		p.mu.Lock()
		if e, ok := p.known[name]; ok {
			e.lastUsed = p.clock.Now()
			p.mu.Unlock()
			return nil
		}
		wait, busy := p.making[name]
		if !busy {
			done := make(chan struct{})
			p.making[name] = done
			p.mu.Unlock()
			err := p.make(ctx, name, nodeClassName, data, tags)
			p.mu.Lock()
			delete(p.making, name)
			close(done)
			p.mu.Unlock()
			return err
		}
		p.mu.Unlock()
		select {
		case <-wait:
			// Known now, or the attempt failed and this caller tries.
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// make describes the named launch template, creating it if missing
// (and recording the size of the user data it creates it with).
func (p *Provider) make(ctx context.Context, name, nodeClassName string, data *ec2types.RequestLaunchTemplateData, tags map[string]string) error {
	out, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	if err == nil {
		if lt, ok := named(out.LaunchTemplates, name); ok {
			p.record(name, aws.ToString(lt.LaunchTemplateId))
			return nil
		}
	}
	if err != nil && errorCode(err) != codeNameNotFound {
		return fmt.Errorf("describing launch template %s: %w", name, err)
	}
	if raw, err := base64.StdEncoding.DecodeString(aws.ToString(data.UserData)); err == nil {
		UserDataBytes.WithLabelValues(nodeClassName).Set(float64(len(raw)))
	}
	created, err := p.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2Tags(tags)}},
	})
	if errorCode(err) == codeNameExists {
		// Another replica or an earlier attempt made it meanwhile.
		return p.ensureExisting(ctx, name)
	}
	if err != nil {
		return fmt.Errorf("creating launch template %s: %w", name, err)
	}
	log.FromContext(ctx).V(1).Info("created launch template", "launchTemplate", name, "id", aws.ToString(created.LaunchTemplate.LaunchTemplateId))
	p.record(name, aws.ToString(created.LaunchTemplate.LaunchTemplateId))
	return nil
}

func (p *Provider) ensureExisting(ctx context.Context, name string) error {
	out, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	if err != nil {
		return fmt.Errorf("describing launch template %s: %w", name, err)
	}
	lt, ok := named(out.LaunchTemplates, name)
	if !ok {
		return fmt.Errorf("describing launch template %s: not in the answer", name)
	}
	p.record(name, aws.ToString(lt.LaunchTemplateId))
	return nil
}

func (p *Provider) record(name, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.known[name] = &entry{id: id, lastUsed: p.clock.Now()}
}

// Invalidate forgets launch templates EC2 says do not exist, so the next
// launch recreates them.
func (p *Provider) Invalidate(names ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range names {
		delete(p.known, name)
	}
}

// Hydrate learns the cluster's existing launch templates (tagged with its
// name), so those no launch uses any more are collected by GC. Each one
// EC2 lists is checked to be karp's (owned) before it is learned: GC
// deletes what is learned.
func (p *Provider) Hydrate(ctx context.Context) error {
	in := &ec2.DescribeLaunchTemplatesInput{
		MaxResults: aws.Int32(200),
		Filters:    []ec2types.Filter{{Name: aws.String("tag:" + awsv1.TagEKSClusterName), Values: []string{p.opts.ClusterName}}},
	}
	for {
		out, err := p.ec2.DescribeLaunchTemplates(ctx, in)
		if err != nil {
			return fmt.Errorf("listing launch templates: %w", err)
		}
		p.mu.Lock()
		for _, lt := range out.LaunchTemplates {
			name := aws.ToString(lt.LaunchTemplateName)
			if !p.owned(lt) {
				continue
			}
			if _, ok := p.known[name]; !ok {
				p.known[name] = &entry{id: aws.ToString(lt.LaunchTemplateId), lastUsed: p.clock.Now()}
			}
		}
		p.mu.Unlock()
		if aws.ToString(out.NextToken) == "" {
			return nil
		}
		in.NextToken = out.NextToken
	}
}

// DeleteAll deletes every launch template of the cluster made for the
// named EC2NodeClass (found by its eks:eks-cluster-name and
// karpenter.k8s.aws/ec2nodeclass tags, so templates made before a restart
// are found too). Each listed template is checked to be karp's and the
// NodeClass's before it is deleted, whatever filter EC2 applied; others
// are skipped. Templates already gone are ignored; the other failures
// are joined.
func (p *Provider) DeleteAll(ctx context.Context, nodeClassName string) error {
	in := &ec2.DescribeLaunchTemplatesInput{
		MaxResults: aws.Int32(200),
		Filters: []ec2types.Filter{
			{Name: aws.String("tag:" + awsv1.TagEKSClusterName), Values: []string{p.opts.ClusterName}},
			{Name: aws.String("tag:" + awsv1.TagNodeClass), Values: []string{nodeClassName}},
		},
	}
	var found []ec2types.LaunchTemplate
	for {
		out, err := p.ec2.DescribeLaunchTemplates(ctx, in)
		if err != nil {
			return fmt.Errorf("listing launch templates of ec2nodeclass %s: %w", nodeClassName, err)
		}
		found = append(found, out.LaunchTemplates...)
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	var errs []error
	for _, lt := range found {
		name := aws.ToString(lt.LaunchTemplateName)
		if !p.owned(lt) || tagValue(lt.Tags, awsv1.TagNodeClass) != nodeClassName {
			log.FromContext(ctx).V(1).Info("not deleting launch template that is not this ec2nodeclass's", "launchTemplate", name, "EC2NodeClass", nodeClassName)
			continue
		}
		p.Invalidate(name)
		_, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: lt.LaunchTemplateId})
		if err != nil && errorCode(err) != codeIDNotFound && errorCode(err) != codeNameNotFound {
			errs = append(errs, fmt.Errorf("deleting launch template %s: %w", name, err))
			continue
		}
		log.FromContext(ctx).Info("deleted launch template of deleted ec2nodeclass", "launchTemplate", name, "EC2NodeClass", nodeClassName)
	}
	UserDataBytes.DeleteLabelValues(nodeClassName)
	return errors.Join(errs...)
}

// GC deletes the launch templates no launch used for TTL.
func (p *Provider) GC(ctx context.Context) error {
	p.mu.Lock()
	now := p.clock.Now()
	stale := map[string]string{}
	for name, e := range p.known {
		if now.Sub(e.lastUsed) >= TTL {
			stale[name] = e.id
			delete(p.known, name)
		}
	}
	p.mu.Unlock()
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(stale)) {
		_, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(stale[name])})
		if err != nil && errorCode(err) != codeIDNotFound && errorCode(err) != codeNameNotFound {
			errs = append(errs, fmt.Errorf("deleting launch template %s: %w", name, err))
			continue
		}
		log.FromContext(ctx).V(1).Info("deleted unused launch template", "launchTemplate", name)
	}
	return errors.Join(errs...)
}

// Run hydrates, then collects unused launch templates every TTL until ctx
// ends. The operator runs it on the leader only.
func (p *Provider) Run(ctx context.Context, clk clock.WithTicker) error {
	if err := p.Hydrate(ctx); err != nil {
		log.FromContext(ctx).Error(err, "hydrating launch templates")
	}
	ticker := clk.NewTicker(TTL)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			if err := p.GC(ctx); err != nil {
				log.FromContext(ctx).Error(err, "collecting launch templates")
			}
		}
	}
}

func errorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// defaultBlockDevices are each family's volumes when the EC2NodeClass
// names none (upstream's): gp3, encrypted.
func defaultBlockDevices(family string) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	gp3 := func(device string, gib int32) ec2types.LaunchTemplateBlockDeviceMappingRequest {
		return ec2types.LaunchTemplateBlockDeviceMappingRequest{
			DeviceName: aws.String(device),
			Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				VolumeSize: aws.Int32(gib), VolumeType: ec2types.VolumeTypeGp3, Encrypted: aws.Bool(true),
			},
		}
	}
	switch family {
	case awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023:
		return []ec2types.LaunchTemplateBlockDeviceMappingRequest{gp3("/dev/xvda", 20)}
	case awsv1.AMIFamilyBottlerocket:
		return []ec2types.LaunchTemplateBlockDeviceMappingRequest{gp3("/dev/xvda", 4), gp3("/dev/xvdb", 20)}
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return []ec2types.LaunchTemplateBlockDeviceMappingRequest{gp3("/dev/sda1", 50)}
	}
	return nil
}

// blockDevices converts spec.blockDeviceMappings, or the family default.
func blockDevices(nodeClass *awsv1.EC2NodeClass) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	if len(nodeClass.Spec.BlockDeviceMappings) == 0 {
		return defaultBlockDevices(nodeClass.AMIFamily())
	}
	var out []ec2types.LaunchTemplateBlockDeviceMappingRequest
	for _, bdm := range nodeClass.Spec.BlockDeviceMappings {
		m := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: bdm.DeviceName}
		if ebs := bdm.EBS; ebs != nil {
			m.Ebs = &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				DeleteOnTermination:      ebs.DeleteOnTermination,
				Encrypted:                ebs.Encrypted,
				KmsKeyId:                 ebs.KMSKeyID,
				SnapshotId:               ebs.SnapshotID,
				VolumeInitializationRate: ebs.VolumeInitializationRate,
				VolumeType:               ec2types.VolumeType(aws.ToString(ebs.VolumeType)),
			}
			if aws.ToInt64(ebs.IOPS) != 0 {
				m.Ebs.Iops = aws.Int32(int32(*ebs.IOPS))
			}
			if aws.ToInt64(ebs.Throughput) != 0 {
				m.Ebs.Throughput = aws.Int32(int32(*ebs.Throughput))
			}
			if ebs.VolumeSize != nil {
				// Whole GiB, rounded up.
				const gib = 1 << 30
				m.Ebs.VolumeSize = aws.Int32(int32((ebs.VolumeSize.Value() + gib - 1) / gib))
			}
		}
		out = append(out, m)
	}
	return out
}

// metadataOptions converts spec.metadataOptions; the CRD defaults every
// field, the fallbacks here are the same defaults. Instance tags are never
// exposed through IMDS.
func metadataOptions(o *awsv1.MetadataOptions) *ec2types.LaunchTemplateInstanceMetadataOptionsRequest {
	if o == nil {
		o = &awsv1.MetadataOptions{}
	}
	return &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
		HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(stringOr(o.HTTPEndpoint, "enabled")),
		HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(stringOr(o.HTTPProtocolIPv6, "disabled")),
		HttpPutResponseHopLimit: aws.Int32(int32(int64Or(o.HTTPPutResponseHopLimit, 1))),
		HttpTokens:              ec2types.LaunchTemplateHttpTokensState(stringOr(o.HTTPTokens, "required")),
		InstanceMetadataTags:    ec2types.LaunchTemplateInstanceMetadataTagsStateDisabled,
	}
}

func stringOr(s *string, def string) string {
	if s == nil || *s == "" {
		return def
	}
	return *s
}

func int64Or(n *int64, def int64) int64 {
	if n == nil {
		return def
	}
	return *n
}
