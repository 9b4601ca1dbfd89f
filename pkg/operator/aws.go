package operator

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	pricingapi "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	awscloudprovider "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	instanceprofilegc "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/instanceprofile/garbagecollection"
	nodeclaimtagging "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclaim/tagging"
	awsnodeclass "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass"
	nodeclasshash "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass/hash"
	nodeclasstermination "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass/termination"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/providers/refresh"
	ssminvalidation "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/providers/ssm"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
	awsinterruption "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/pricing"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/sdkhttp"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/securitygroup"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/subnet"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/version"
	"github.com/karp-autoscaler/karp/pkg/controllers"
	"github.com/karp-autoscaler/karp/pkg/operator/awsfence"
	"github.com/karp-autoscaler/karp/pkg/options"
)

// AWSClients are the AWS API clients the provider calls: the SDK's in
// production, the stateful fakes in tests.
type AWSClients struct {
	Region  string
	EC2     EC2API
	SSM     SSMAPI
	IAM     IAMAPI
	Pricing PricingAPI
	EKS     EKSAPI
	// SQS is read only when --interruption-queue is set.
	SQS SQSAPI
}

// EC2API is every EC2 call the AWS provider's parts make.
type EC2API interface {
	instance.EC2API
	DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, opts ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
	DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, opts ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
	DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, opts ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	DescribeCapacityReservations(ctx context.Context, in *ec2.DescribeCapacityReservationsInput, opts ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error)
	CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, opts ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, opts ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, opts ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
}

// SSMAPI is the SSM call AMI aliases are resolved with.
type SSMAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// IAMAPI are the IAM calls instance profiles are looked up, created and
// deleted with.
type IAMAPI interface {
	instanceprofile.IAMAPI
}

// PricingAPI is the Price List call on-demand prices come from.
type PricingAPI interface {
	GetProducts(ctx context.Context, in *pricingapi.GetProductsInput, opts ...func(*pricingapi.Options)) (*pricingapi.GetProductsOutput, error)
}

// EKSAPI is the EKS call the API server endpoint is discovered with when
// --cluster-endpoint is not set.
type EKSAPI interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, opts ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// SQSAPI are the SQS calls interruption handling makes.
type SQSAPI interface {
	awsinterruption.SQSAPI
}

// loadAWSConfig loads the SDK's default config, then wraps the HTTP client
// it built (which honours AWS_CA_BUNDLE and the SDK's transport settings)
// with sdkhttp's. Passing sdkhttp's client to LoadDefaultConfig instead
// would make a custom CA bundle fail to load: the SDK only applies one to
// its own buildable client.
func loadAWSConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading AWS SDK config: %w", err)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = sdkhttp.NewClient()
	} else {
		cfg.HTTPClient = sdkhttp.Wrap(cfg.HTTPClient)
	}
	return cfg, nil
}

// newAWSProvider builds the SDK clients from the default credential chain
// and region (the SDK's AWS_ENDPOINT_URL* variables apply), sending through
// sdkhttp's client, then the provider.
func newAWSProvider(ctx context.Context, opts *options.Options, op *Operator, restConfig *rest.Config) (*Provider, error) {
	cfg, err := loadAWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		return nil, errors.New("no AWS region: set AWS_REGION (or the region of the AWS profile in use)")
	}
	if op.fence != nil {
		// A replica that may have lost its Lease changes nothing in AWS:
		// not only launches and terminations (the fenced cloud provider)
		// but the provider's own loops' clean-ups, tags and queue reads.
		cfg.APIOptions = append(cfg.APIOptions, awsfence.APIOption(op.fence))
	}
	return NewAWSProvider(ctx, opts, op, restConfig, AWSClients{
		Region:  cfg.Region,
		EC2:     ec2.NewFromConfig(cfg),
		SSM:     ssm.NewFromConfig(cfg),
		IAM:     iam.NewFromConfig(cfg),
		Pricing: pricingapi.NewFromConfig(cfg, func(o *pricingapi.Options) { o.Region = pricing.PricingRegion(cfg.Region) }),
		EKS:     eks.NewFromConfig(cfg),
		SQS:     sqs.NewFromConfig(cfg),
	})
}

// NewAWSProvider builds the AWS provider over the clients: the cluster
// facts user data needs, the providers with their caches, and the AWS
// controllers. Instance types must load (as upstream, the process stops
// otherwise); prices fall back to the embedded ones.
func NewAWSProvider(ctx context.Context, opts *options.Options, op *Operator, restConfig *rest.Config, clients AWSClients) (*Provider, error) {
	awsOpts := opts.AWS
	logger := log.FromContext(ctx)
	ec2Client := clients.EC2
	clk := op.Clock
	ticker, ok := clk.(clock.WithTicker)
	if !ok {
		ticker = clock.RealClock{}
	}

	endpoint, err := clusterEndpoint(ctx, awsOpts.ClusterEndpoint, awsOpts.ClusterName, clients.EKS)
	if err != nil {
		return nil, err
	}
	facts, err := clusterFacts(ctx, endpoint, awsOpts.ClusterCABundle, restConfig, op.Manager.GetAPIReader())
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("building discovery client: %w", err)
	}
	versions := version.NewProvider(disco, clk)

	prices, err := pricing.NewProvider(ec2Client, clients.Pricing, clients.Region, awsOpts.IsolatedVPC, clk)
	if err != nil {
		return nil, fmt.Errorf("building pricing provider: %w", err)
	}
	if err := prices.Update(ctx); err != nil {
		logger.Error(err, "updating prices, using the embedded prices until the next refresh")
	}
	unavailable := cache.NewUnavailableOfferings(clk)
	var reservations *capacityreservation.Provider
	var counter interface{ AvailableInstanceCount(string) (int, bool) }
	if opts.FeatureGates.Enabled(options.FeatureReservedCapacity) {
		reservations = capacityreservation.NewProvider(ec2Client, clk)
		counter = reservations
	}
	types := instancetype.NewProvider(ec2Client, prices, unavailable, counter, instancetype.Options{
		Region: clients.Region, VMMemoryOverheadPercent: awsOpts.VMMemoryOverheadPercent, ReservedENIs: awsOpts.ReservedENIs,
	}, clk)
	if err := types.Update(ctx); err != nil {
		return nil, fmt.Errorf("loading instance types from EC2: %w", err)
	}
	launchTemplates := launchtemplate.NewProvider(ec2Client, clk, launchtemplate.Options{
		ClusterName:     awsOpts.ClusterName,
		ClusterEndpoint: facts.endpoint,
		CABundle:        facts.caBundle,
		ClusterCIDR:     facts.serviceCIDR,
		ClusterDNSIP:    facts.dnsIP,
	})
	instances := instance.NewProvider(ec2Client, ticker, awsOpts.ClusterName, unavailable)
	if err := instance.Register(crmetrics.Registry); err != nil {
		return nil, fmt.Errorf("registering AWS instance metrics: %w", err)
	}
	subnets := subnet.NewProvider(ec2Client, clk, awsOpts.SubnetRefreshInterval)
	cp := awscloudprovider.New(op.KubeClient, clk, awsOpts.ClusterName, types, instances, launchTemplates, unavailable).WithSubnets(subnets)
	if reservations != nil {
		cp = cp.WithReservations(reservations)
	}

	amis := ami.NewProvider(ec2Client, clients.SSM, versions, clk, awsOpts.AMIRefreshInterval).WithAliasParameterTTL(awsOpts.SSMAliasCacheTTL)
	profiles := instanceprofile.NewProvider(clients.IAM, clk, awsOpts.ClusterName, clients.Region)
	providers := awsnodeclass.Providers{
		AMIs:             amis,
		Subnets:          subnets,
		SecurityGroups:   securitygroup.NewProvider(ec2Client, clk),
		Version:          versions,
		InstanceProfiles: profiles,
	}
	if reservations != nil {
		providers.CapacityReservations = reservations
	}
	interruption, err := interruptionController(op, awsOpts.InterruptionQueue, clients.SQS, unavailable, reservations)
	if err != nil {
		return nil, err
	}
	// As upstream, no IAM cleanup on NodeClass deletion in an isolated VPC.
	nodeClassTermination := nodeclasstermination.NewController(op.KubeClient, op.Recorder, launchTemplates, profiles)
	var iamCleanup []controllers.Controller
	if awsOpts.IsolatedVPC {
		nodeClassTermination = nodeclasstermination.NewController(op.KubeClient, op.Recorder, launchTemplates, nil)
	} else {
		// Deletes the cluster's instance profiles nothing uses any more.
		iamCleanup = append(iamCleanup, instanceprofilegc.NewController(op.Manager.GetAPIReader(), profiles, clk))
	}
	logger.Info("built the AWS cloud provider", "region", clients.Region, "clusterName", awsOpts.ClusterName,
		"clusterEndpoint", facts.endpoint, "serviceCIDR", facts.serviceCIDR, "clusterDNS", facts.dnsIP)
	provider := &Provider{
		CloudProvider: cp,
		Controllers: append([]controllers.Controller{
			// Resolves each EC2NodeClass's subnets, security groups, AMIs,
			// instance profile and Ready condition.
			awsnodeclass.NewController(op.KubeClient, op.Recorder, clk, providers),
			// Holds each EC2NodeClass with its finalizer until its NodeClaims
			// are gone, then deletes its launch templates and instance profiles.
			nodeClassTermination,
			// Tags registered NodeClaims' instances with Name and
			// karpenter.sh/nodeclaim, once each.
			nodeclaimtagging.NewController(op.KubeClient, instances, ec2Client, awsOpts.ClusterName, clk),
			// Keeps each EC2NodeClass's drift hash annotations current and
			// re-stamps NodeClaims of an older hash version.
			nodeclasshash.NewController(op.KubeClient),
			// Drops cached AMI aliases whose image was deprecated.
			ssminvalidation.NewController(amis),
			// Re-reads instance types and offerings every 12 hours.
			refresh.NewInstanceTypeController(types),
			// Re-reads on-demand and spot prices every 12 hours.
			refresh.NewPricingController(prices),
			// Deletes launch templates no launch used for a minute.
			&runnable{name: "launchtemplate.garbagecollection", run: func(ctx context.Context) error { return launchTemplates.Run(ctx, ticker) }},
		}, iamCleanup...),
		Close: func() {},
	}
	if interruption != nil {
		// Acts on EC2 and AWS Health events from the interruption queue
		// (only with --interruption-queue).
		provider.Controllers = append(provider.Controllers, interruption)
	}
	return provider, nil
}

// interruptionController is the SQS interruption controller when
// --interruption-queue names a queue, else nil.
func interruptionController(op *Operator, queue string, api SQSAPI, unavailable *cache.UnavailableOfferings,
	reservations *capacityreservation.Provider) (*awsinterruption.Controller, error) {
	if queue == "" {
		return nil, nil
	}
	if api == nil {
		return nil, errors.New("no SQS client to poll the interruption queue (--interruption-queue) with")
	}
	var full awsinterruption.ReservationMarker
	if reservations != nil {
		full = reservations
	}
	return awsinterruption.NewController(op.KubeClient, api, queue, unavailable, full, op.Clock, op.Recorder), nil
}

// clusterEndpoint is the API server URL nodes join: the flag when set, else
// the endpoint EKS reports for the cluster (as upstream, also with
// --isolated-vpc, where the call goes through the EKS VPC endpoint). A
// failed call stops the process at start: the controller's own address is
// the kubernetes Service IP inside a pod, which a new node cannot reach.
func clusterEndpoint(ctx context.Context, endpoint, clusterName string, api EKSAPI) (string, error) {
	if endpoint != "" {
		return endpoint, nil
	}
	if api == nil {
		return "", errors.New("no EKS client to discover the API server endpoint with eks:DescribeCluster; set --cluster-endpoint (CLUSTER_ENDPOINT)")
	}
	out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &clusterName})
	if err != nil {
		return "", fmt.Errorf("discovering the API server endpoint of EKS cluster %q (--cluster-name) with eks:DescribeCluster; "+
			"grant the action or set --cluster-endpoint (CLUSTER_ENDPOINT): %w", clusterName, err)
	}
	if out.Cluster == nil || out.Cluster.Endpoint == nil || *out.Cluster.Endpoint == "" {
		return "", fmt.Errorf("eks:DescribeCluster reports no API server endpoint for cluster %q (--cluster-name); "+
			"set --cluster-endpoint (CLUSTER_ENDPOINT)", clusterName)
	}
	return *out.Cluster.Endpoint, nil
}

// cluster are the facts about the cluster that go into user data.
type cluster struct {
	endpoint    string
	caBundle    string
	serviceCIDR string
	dnsIP       string
}

// clusterFacts resolves the API server CA (the flag, else the controller's
// own rest config, as upstream), kube-dns's ClusterIP and the service CIDR
// (from the cluster's ServiceCIDR object). The last two are only logged
// when missing: custom DNS setups have no kube-dns, and AL2023 launches
// report the missing CIDR themselves.
func clusterFacts(ctx context.Context, endpoint, caBundle string, restConfig *rest.Config, reader client.Reader) (cluster, error) {
	logger := log.FromContext(ctx)
	ca, err := clusterCABundle(caBundle, restConfig)
	if err != nil {
		return cluster{}, err
	}
	c := cluster{endpoint: endpoint, caBundle: ca}
	dns := &corev1.Service{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-dns"}, dns); err != nil {
		logger.Error(err, "looking up kube-dns; nodes use their AMI's default cluster DNS")
	} else {
		c.dnsIP = dns.Spec.ClusterIP
	}
	cidr := &networkingv1.ServiceCIDR{}
	if err := reader.Get(ctx, client.ObjectKey{Name: "kubernetes"}, cidr); err != nil || len(cidr.Spec.CIDRs) == 0 {
		logger.Error(err, "looking up the service CIDR (ServiceCIDR kubernetes); AL2023 launches need it")
	} else {
		c.serviceCIDR = cidr.Spec.CIDRs[0]
	}
	return c, nil
}

// clusterCABundle is the base64 CA nodes trust for the API server: the flag
// when set, else the CA of the controller's own connection (as upstream:
// in a pod, the service account's CA, which is the cluster's).
func clusterCABundle(caBundle string, restConfig *rest.Config) (string, error) {
	if caBundle != "" {
		return caBundle, nil
	}
	ca := restConfig.CAData
	if len(ca) == 0 && restConfig.CAFile != "" {
		raw, err := os.ReadFile(restConfig.CAFile)
		if err != nil {
			return "", fmt.Errorf("reading the API server CA for --cluster-ca-bundle: %w", err)
		}
		ca = raw
	}
	return base64.StdEncoding.EncodeToString(ca), nil
}

// runnable is a controller that is a background loop on the leader.
type runnable struct {
	name string
	run  func(ctx context.Context) error
}

func (r *runnable) Name() string { return r.name }

func (r *runnable) Register(_ context.Context, mgr manager.Manager) error {
	return mgr.Add(manager.RunnableFunc(r.run))
}
