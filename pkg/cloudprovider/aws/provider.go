package aws

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/capacityreservation/capacitytype"
	capacityexpiration "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/capacityreservation/expiration"
	instanceprofilegc "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/instanceprofile/garbagecollection"
	nodeclaimtagging "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclaim/tagging"
	awsnodeclass "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass"
	nodeclasshash "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass/hash"
	nodeclasstermination "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass/termination"
	instancetypecapacity "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/providers/instancetype/capacity"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/providers/refresh"
	ssminvalidation "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/providers/ssm"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype/kubeletcel"
	awsinterruption "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption/instancestatus"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	awsoptions "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/options"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/placementgroup"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/pricing"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/securitygroup"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/subnet"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/version"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/zonalshift"
	metricsstatus "github.com/karp-autoscaler/karp/pkg/metrics/status"
)

// Dependencies are what the AWS provider is built from besides the AWS
// clients: the process's connection to the cluster and its settings.
type Dependencies struct {
	// KubeClient reads EC2NodeClasses and NodeClaims (from the manager's
	// cache in the process) and writes their status.
	KubeClient client.Client
	// APIReader reads straight from the API server: the cluster facts at
	// start and the instance profiles' garbage collection.
	APIReader client.Reader
	// Recorder publishes the controllers' events.
	Recorder events.EventRecorder
	// Clock is the time source; a clock.WithTicker also drives the
	// launch batches and the launch template collection.
	Clock clock.Clock
	// RestConfig is the controller's own connection to the API server: its
	// CA is the one nodes trust when Options.ClusterCABundle is empty, and
	// its discovery client tells the Kubernetes version AMI aliases
	// resolve for.
	RestConfig *rest.Config
	// Options are the AWS settings (--cluster-name, ...).
	Options *awsoptions.Options
	// ReservedCapacity is the ReservedCapacity feature gate: launches into
	// capacity reservations, counted down as instances take them.
	ReservedCapacity bool
	// Registerer takes the provider's own metrics (launch failures, fleet
	// batch sizes).
	Registerer prometheus.Registerer
	// ReplaceFirst is --replace-first: a spot interruption warning that
	// leaves time for a launch marks the NodeClaim to be replaced first
	// instead of deleting it at once.
	ReplaceFirst bool
}

// Controller is one controller the AWS provider needs beside the core
// ones; pkg/operator registers it with the rest.
type Controller interface {
	// Name is "<resource>.<concern>", e.g. "ec2nodeclass.status".
	Name() string
	// Register adds the controller and its watches to mgr.
	Register(ctx context.Context, mgr manager.Manager) error
}

// Provider is the AWS provider as the process runs it: the cloud
// provider, its controllers, and the parts they share, which tests reach
// into.
type Provider struct {
	// CloudProvider launches, lists and terminates EC2 instances.
	CloudProvider *CloudProvider
	// Controllers are the AWS controllers, in registration order.
	Controllers []Controller
	// InstanceTypes are the region's instance types and offerings.
	InstanceTypes *instancetype.Provider
	// Prices are the on-demand and spot prices.
	Prices *pricing.Provider
	// UnavailableOfferings are the offerings recently refused for capacity.
	UnavailableOfferings *cache.UnavailableOfferings
	// Instances launches and describes the cluster's instances.
	Instances *instance.Provider
	// LaunchTemplates makes and collects the launch templates.
	LaunchTemplates *launchtemplate.Provider
	// Subnets discovers subnets and picks each launch's.
	Subnets *subnet.Provider
	// CapacityReservations counts the reservations' free instances; nil
	// without ReservedCapacity.
	CapacityReservations *capacityreservation.Provider
	// ZonalShifts reads the cluster's ARC zonal shifts into
	// UnavailableOfferings; nil without --enable-zonal-shift.
	ZonalShifts *zonalshift.Provider
}

// NewProvider builds the AWS provider over the clients: the cluster facts
// user data needs, the providers with their caches, and the AWS
// controllers. Instance types must load (as upstream, the process stops
// otherwise); prices fall back to the embedded ones. The operator, the
// tests' awstest.World and awsprocess all build the provider here, so the
// tests run the shipped assembly.
func NewProvider(ctx context.Context, deps Dependencies, clients Clients) (*Provider, error) {
	opts := deps.Options
	endpoint, err := clusterEndpoint(ctx, opts.ClusterEndpoint, opts.ClusterName, clients.EKS)
	if err != nil {
		return nil, err
	}
	facts, err := clusterFacts(ctx, endpoint, opts.ClusterCABundle, deps.RestConfig, deps.APIReader)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(deps.RestConfig)
	if err != nil {
		return nil, fmt.Errorf("building discovery client: %w", err)
	}
	versions := version.NewProvider(disco, deps.Clock)
	if opts.EKSControlPlane {
		// The version is EKS's, read at start as upstream does: a missing
		// eks:DescribeCluster permission stops the process.
		if _, err := versions.FromEKS(clients.EKS, opts.ClusterName).Get(ctx); err != nil {
			return nil, err
		}
	}
	p, err := newParts(ctx, deps, clients, facts)
	if err != nil {
		return nil, err
	}
	if err := p.addControllers(deps, clients, versions); err != nil {
		return nil, err
	}
	log.FromContext(ctx).Info("built the AWS cloud provider", "region", clients.Region, "clusterName", opts.ClusterName,
		"clusterEndpoint", facts.endpoint, "serviceCIDR", facts.serviceCIDR, "clusterDNS", facts.dnsIP)
	return p, nil
}

// newParts builds the providers the cloud provider and the controllers
// share, and the cloud provider over them.
func newParts(ctx context.Context, deps Dependencies, clients Clients, facts cluster) (*Provider, error) {
	opts, clk, ec2Client := deps.Options, deps.Clock, clients.EC2
	prices, err := pricing.NewProvider(ec2Client, clients.Pricing, clients.Region, opts.IsolatedVPC, clk)
	if err != nil {
		return nil, fmt.Errorf("building pricing provider: %w", err)
	}
	if err := prices.Update(ctx); err != nil {
		log.FromContext(ctx).Error(err, "updating prices, using the embedded prices until the next refresh")
	}
	p := &Provider{Prices: prices, UnavailableOfferings: cache.NewUnavailableOfferings(clk)}
	if opts.EnableZonalShift {
		if p.ZonalShifts, err = zonalshift.NewProvider(ctx, clients.ARCZonalShift, clients.EKS, opts.ClusterName, p.UnavailableOfferings, clk); err != nil {
			return nil, err
		}
	}
	var counter interface{ AvailableInstanceCount(string) (int, bool) }
	if deps.ReservedCapacity {
		p.CapacityReservations = capacityreservation.NewProvider(ec2Client, clk)
		counter = p.CapacityReservations
	}
	// The NodeClassCEL AWS gate: CEL expressions in spec.kubelet are
	// evaluated (nil leaves them unevaluated, as upstream with the gate off).
	var expressions *kubeletcel.Environment
	if opts.FeatureGates[awsoptions.FeatureNodeClassCEL] {
		if expressions, err = kubeletcel.New(); err != nil {
			return nil, err
		}
	}
	p.InstanceTypes = instancetype.NewProvider(ec2Client, prices, p.UnavailableOfferings, counter, instancetype.Options{
		Region: clients.Region, VMMemoryOverheadPercent: opts.VMMemoryOverheadPercent, ReservedENIs: opts.ReservedENIs,
		KubeletExpressions: expressions,
	}, clk)
	if err := p.InstanceTypes.Update(ctx); err != nil {
		return nil, fmt.Errorf("loading instance types from EC2: %w", err)
	}
	p.LaunchTemplates = launchtemplate.NewProvider(ec2Client, clk, launchtemplate.Options{
		ClusterName:     opts.ClusterName,
		ClusterEndpoint: facts.endpoint,
		CABundle:        facts.caBundle,
		ClusterCIDR:     facts.serviceCIDR,
		ClusterDNSIP:    facts.dnsIP,
	})
	p.Instances = instance.NewProvider(ec2Client, ticker(clk), opts.ClusterName, p.UnavailableOfferings)
	if err := errors.Join(instance.Register(deps.Registerer), launchtemplate.Register(deps.Registerer)); err != nil {
		return nil, fmt.Errorf("registering AWS instance metrics: %w", err)
	}
	p.Subnets = subnet.NewProvider(ec2Client, clk, opts.SubnetRefreshInterval)
	p.CloudProvider = New(deps.KubeClient, clk, opts.ClusterName, p.InstanceTypes, p.Instances, p.LaunchTemplates, p.UnavailableOfferings).
		WithSubnets(p.Subnets)
	if p.CapacityReservations != nil {
		p.CloudProvider = p.CloudProvider.WithReservations(p.CapacityReservations)
	}
	return p, nil
}

// addControllers builds the AWS controllers over the provider's parts.
func (p *Provider) addControllers(deps Dependencies, clients Clients, versions *version.Provider) error {
	opts, clk, ec2Client := deps.Options, deps.Clock, clients.EC2
	amis := ami.NewProvider(ec2Client, clients.SSM, versions, clk, opts.AMIRefreshInterval).WithAliasParameterTTL(opts.SSMAliasCacheTTL)
	profiles := instanceprofile.NewProvider(clients.IAM, clk, opts.ClusterName, clients.Region)
	providers := awsnodeclass.Providers{
		AMIs:             amis,
		Subnets:          p.Subnets,
		SecurityGroups:   securitygroup.NewProvider(ec2Client, clk),
		Version:          versions,
		InstanceProfiles: profiles,
		PlacementGroups:  placementgroup.NewProvider(ec2Client, clk),
	}
	if p.CapacityReservations != nil {
		providers.CapacityReservations = p.CapacityReservations
	}
	if expressions := p.InstanceTypes.KubeletExpressions(); expressions != nil {
		providers.KubeletExpressions = expressions
	}
	if !opts.DisableDryRun {
		// ValidationSucceeded waits for the launch calls' dry runs.
		providers.DryRun = awsnodeclass.NewDryRun(deps.KubeClient, ec2Client, p.LaunchTemplates, p.InstanceTypes, opts.ClusterName, clk)
	}
	interruption, err := p.interruptionController(deps, opts.InterruptionQueue, clients.SQS)
	if err != nil {
		return err
	}
	// As upstream, no IAM cleanup on NodeClass deletion in an isolated VPC.
	nodeClassTermination := nodeclasstermination.NewController(deps.KubeClient, deps.Recorder, p.LaunchTemplates, profiles)
	var iamCleanup []Controller
	if opts.IsolatedVPC {
		nodeClassTermination = nodeclasstermination.NewController(deps.KubeClient, deps.Recorder, p.LaunchTemplates, nil)
	} else {
		// Deletes the cluster's instance profiles nothing uses any more.
		iamCleanup = append(iamCleanup, instanceprofilegc.NewController(deps.APIReader, profiles, clk))
	}
	launchTemplates, tick := p.LaunchTemplates, ticker(clk)
	p.Controllers = append([]Controller{
		// Resolves each EC2NodeClass's subnets, security groups, AMIs,
		// instance profile and Ready condition.
		awsnodeclass.NewController(deps.KubeClient, deps.Recorder, clk, providers),
		// Holds each EC2NodeClass with its finalizer until its NodeClaims
		// are gone, then deletes its launch templates and instance profiles.
		nodeClassTermination,
		// Tags registered NodeClaims' instances with Name and
		// karpenter.sh/nodeclaim, once each.
		nodeclaimtagging.NewController(deps.KubeClient, p.Instances, ec2Client, opts.ClusterName, clk),
		// Keeps each EC2NodeClass's drift hash annotations current and
		// re-stamps NodeClaims of an older hash version.
		nodeclasshash.NewController(deps.KubeClient),
		// Reports each EC2NodeClass's conditions and termination as upstream's
		// operator_ec2nodeclass_* (and deprecated operator_*) metrics.
		metricsstatus.NewRegistrar(deps.Registerer, clk, deps.Recorder, metricsstatus.EC2NodeClasses()),
		// Drops cached AMI aliases whose image was deprecated.
		ssminvalidation.NewController(amis),
		// Re-reads instance types and offerings every 12 hours.
		refresh.NewInstanceTypeController(p.InstanceTypes),
		// Learns instance types' memory capacity from registered Nodes.
		instancetypecapacity.NewController(deps.KubeClient, p.InstanceTypes),
		// Re-reads on-demand and spot prices every 12 hours.
		refresh.NewPricingController(p.Prices),
		// Deletes launch templates no launch used for a minute.
		&runnable{name: "launchtemplate.garbagecollection", run: func(ctx context.Context) error { return launchTemplates.Run(ctx, tick) }},
	}, iamCleanup...)
	if interruption != nil {
		// Acts on EC2 and AWS Health events from the interruption queue
		// (only with --interruption-queue).
		p.Controllers = append(p.Controllers, interruption)
	}
	// Replaces instances EC2 reports impaired or with a scheduled event,
	// through the interruption handler (queue or not).
	p.Controllers = append(p.Controllers, instancestatus.NewController(ec2Client,
		awsinterruption.NewHandler(deps.KubeClient, nil, nil, clk, deps.Recorder), clk))
	// Relabels reserved NodeClaims and Nodes on-demand once their
	// reservation ended.
	p.Controllers = append(p.Controllers, capacitytype.NewController(deps.KubeClient, p.CloudProvider))
	if p.ZonalShifts != nil {
		// Re-reads the ARC zonal shifts every 30 seconds and tells the
		// NodePools a shift that began or ended concerns.
		p.Controllers = append(p.Controllers, zonalshift.NewController(deps.KubeClient, deps.Recorder, p.ZonalShifts))
	}
	if p.CapacityReservations != nil {
		// Drains capacity blocks' nodes 40 minutes before the block ends.
		p.Controllers = append(p.Controllers, capacityexpiration.NewController(deps.KubeClient, p.CapacityReservations, deps.Recorder, clk))
	}
	return nil
}

// interruptionController is the SQS interruption controller when
// --interruption-queue names a queue, else nil.
func (p *Provider) interruptionController(deps Dependencies, queue string, api SQSAPI) (*awsinterruption.Controller, error) {
	if queue == "" {
		return nil, nil
	}
	if api == nil {
		return nil, errors.New("no SQS client to poll the interruption queue (--interruption-queue) with")
	}
	var full awsinterruption.ReservationMarker
	if p.CapacityReservations != nil {
		full = p.CapacityReservations
	}
	c := awsinterruption.NewController(deps.KubeClient, api, queue, p.UnavailableOfferings, full, deps.Clock, deps.Recorder)
	c.ReplaceFirst(deps.ReplaceFirst)
	return c, nil
}

// ticker is clk when it can make tickers (a fake clock in tests), else the
// real clock.
func ticker(clk clock.Clock) clock.WithTicker {
	if t, ok := clk.(clock.WithTicker); ok {
		return t
	}
	return clock.RealClock{}
}

// runnable is a controller that is a background loop on the leader.
type runnable struct {
	name string
	run  func(ctx context.Context) error
}

// Name is the loop's name.
func (r *runnable) Name() string { return r.name }

// Register adds the loop to mgr; it runs on the leader only.
func (r *runnable) Register(_ context.Context, mgr manager.Manager) error {
	return mgr.Add(manager.RunnableFunc(r.run))
}
