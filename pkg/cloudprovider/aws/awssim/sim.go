package awssim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami/amitest"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/fake"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
)

// Defaults of a Sim's account.
const (
	DefaultClusterName = "karp-local"
	DefaultRegion      = "us-west-2"
	// DiscoveryTagKey tags the subnets and security groups an EC2NodeClass
	// finds with the getting-started selectors.
	DiscoveryTagKey = "karpenter.sh/discovery"
	// accessKeyID and secretAccessKey are the static credentials the
	// controller signs its requests with; the Sim does not check them.
	accessKeyID     = "AKIAKARPSIMULATED000"
	secretAccessKey = "karp-simulated-secret-access-key"
)

// Options configure a Sim.
type Options struct {
	// ClusterName names the EKS cluster, tags the discoverable resources
	// and names the interruption queue (default DefaultClusterName).
	ClusterName string
	// Region is the account's region (default DefaultRegion); its zones
	// a, b and c offer every catalog type.
	Region string
	// KubernetesVersion ("1.33") is the version whose EKS-optimized AMIs
	// SSM publishes: the local API server's.
	KubernetesVersion string
	// ClusterEndpoint and CABundle (base64 PEM) are what
	// eks:DescribeCluster reports: the local API server.
	ClusterEndpoint string
	CABundle        string
	// Clock stamps launches, AMI releases and spot prices (default real),
	// and times spot reclaims.
	Clock clock.Clock
	// SpotReclaimDelay is how long after a spot interruption warning
	// (SendInterruption) EC2 reclaims the instance if it still runs:
	// default two minutes, as EC2; negative, never.
	SpotReclaimDelay time.Duration
}

// DefaultSpotReclaimDelay is the notice EC2 gives before it reclaims a
// spot instance.
const DefaultSpotReclaimDelay = 2 * time.Minute

// Sim is a simulated AWS account for one EKS cluster: the stateful fakes
// seeded as a real account looks to the getting-started manifests (the
// EC2 catalog offered in three zones with spot and on-demand prices,
// subnets and security groups tagged karpenter.sh/discovery=<cluster>,
// EKS-optimized AMIs published in SSM for the cluster's Kubernetes version,
// the node role and its instance profile, the EKS cluster, and the SQS
// interruption queue). Serve puts it on loopback HTTP in the AWS wire
// protocols, so an unchanged controller reaches it with the SDK's endpoint
// settings (Env).
type Sim struct {
	EC2     *fake.EC2
	SSM     *fake.SSM
	IAM     *fake.IAM
	Pricing *fake.Pricing
	EKS     *fake.EKS
	SQS     *fake.SQS

	opts  Options
	zones []fake.OfferingZone
	// network is the second octet of the VPC's 10.x.0.0/16, random per
	// account so the Node names of two Sims on one cluster differ.
	network byte
	// types are the catalog's instance types by name, as EC2 describes them.
	types map[string]ec2types.InstanceTypeInfo
	// amiRelease is the creation time of the latest published AMIs.
	amiRelease time.Time
	// ssmDown makes every SSM call fail (SetSSMOutage).
	ssmDown *outage
	// router, url and stop are the HTTP side, once Serve ran.
	router *Router
	url    string
	stop   func()

	// reclaims are the pending spot reclaims, stopped by Close.
	mu       sync.Mutex
	reclaims []func() bool
}

// New builds a seeded Sim. It is not served yet: call Serve.
func New(ctx context.Context, opts Options) (*Sim, error) {
	if opts.ClusterName == "" {
		opts.ClusterName = DefaultClusterName
	}
	if opts.Region == "" {
		opts.Region = DefaultRegion
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.SpotReclaimDelay == 0 {
		opts.SpotReclaimDelay = DefaultSpotReclaimDelay
	}
	if opts.KubernetesVersion == "" {
		return nil, errors.New("awssim: the cluster's Kubernetes version is required (its AMIs are published for it)")
	}
	s := &Sim{
		EC2: fake.NewEC2(), SSM: fake.NewSSM(), IAM: fake.NewIAM(), Pricing: fake.NewPricing(), EKS: fake.NewEKS(),
		opts: opts, ssmDown: &outage{}, network: byte(rand.IntN(256)),
	}
	for i, suffix := range []string{"a", "b", "c"} {
		s.zones = append(s.zones, fake.OfferingZone{Name: opts.Region + suffix, ID: fmt.Sprintf("%s-az%d", regionCode(opts.Region), i+1)})
	}
	if err := s.seedCatalog(); err != nil {
		return nil, err
	}
	s.seedNetwork()
	// The current AMIs were released a week ago; PublishAMI releases newer ones.
	s.amiRelease = opts.Clock.Now().Add(-7 * 24 * time.Hour).Truncate(time.Second)
	for _, alias := range []string{"al2023@latest", "bottlerocket@latest"} {
		amitest.Publish(s.EC2, s.SSM, alias, opts.KubernetesVersion, s.amiRelease)
	}
	if minor := kubernetesMinor(opts.KubernetesVersion); minor > 0 && minor < 33 {
		amitest.Publish(s.EC2, s.SSM, "al2@latest", opts.KubernetesVersion, s.amiRelease)
	}
	s.IAM.AddInstanceProfile(s.InstanceProfileName(), s.RoleName())
	s.EKS.PutCluster(opts.ClusterName, opts.ClusterEndpoint, opts.CABundle)
	if err := s.seedQueue(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// seedCatalog offers the embedded EC2 catalog in every zone, with the spot
// prices karp's catalog model derives and the on-demand prices in the
// Price List API; fleets fill at those prices.
func (s *Sim) seedCatalog() error {
	infos, err := fake.CatalogInstanceTypes(instancetypes.EC2)
	if err != nil {
		return fmt.Errorf("loading the EC2 catalog: %w", err)
	}
	s.EC2.SeedCatalog(infos, s.zones...)
	s.types = map[string]ec2types.InstanceTypeInfo{}
	for _, info := range infos {
		s.types[string(info.InstanceType)] = info
	}
	if err := s.EC2.SeedCatalogSpotPrices(instancetypes.EC2, s.zones, s.opts.Clock.Now().Add(-time.Hour)); err != nil {
		return fmt.Errorf("seeding spot prices: %w", err)
	}
	if err := s.Pricing.SeedCatalogOnDemandPrices(s.opts.Region, instancetypes.EC2); err != nil {
		return fmt.Errorf("seeding on-demand prices: %w", err)
	}
	onDemand, err := fake.CatalogOnDemandPrices(instancetypes.EC2)
	if err != nil {
		return err
	}
	catalogOpts := catalog.DefaultOptions()
	s.EC2.SetPricer(func(pool fake.CapacityPool) (float64, bool) {
		price, ok := onDemand[pool.InstanceType]
		if !ok {
			return 0, false
		}
		if pool.CapacityType == karpv1.CapacityTypeSpot {
			return catalog.SpotPrice(pool.InstanceType, pool.Zone, price, catalogOpts), true
		}
		return price, true
	})
	s.EC2.SetLaunchClock(s.opts.Clock)
	// Terminated instances stay shutting-down briefly, as in EC2.
	s.EC2.SetTerminationDelay(5 * time.Second)
	return nil
}

// seedNetwork adds a private subnet per zone and the node security group,
// tagged for discovery, plus an untagged subnet and group per zone that a
// selector change can move nodes to.
func (s *Sim) seedNetwork() {
	discovery := map[string]string{DiscoveryTagKey: s.opts.ClusterName}
	for i, z := range s.zones {
		s.EC2.AddSubnets(
			fake.NewSubnet(fmt.Sprintf("subnet-private%d", i+1), z.Name, z.ID, 8000, withName(discovery, fmt.Sprintf("%s-private-%s", s.opts.ClusterName, z.Name))),
			fake.NewSubnet(fmt.Sprintf("subnet-alternate%d", i+1), z.Name, z.ID, 8000, map[string]string{"Name": fmt.Sprintf("%s-alternate-%s", s.opts.ClusterName, z.Name), "karp.sh/tier": "alternate"}),
		)
	}
	s.EC2.AddSecurityGroups(
		fake.NewSecurityGroup("sg-nodes", s.opts.ClusterName+"-node", withName(discovery, s.opts.ClusterName+"-node")),
		fake.NewSecurityGroup("sg-alternate", s.opts.ClusterName+"-alternate", map[string]string{"Name": s.opts.ClusterName + "-alternate", "karp.sh/tier": "alternate"}),
	)
}

func withName(tags map[string]string, name string) map[string]string {
	out := map[string]string{"Name": name}
	for k, v := range tags {
		out[k] = v
	}
	return out
}

// ClusterName is the EKS cluster's name.
func (s *Sim) ClusterName() string { return s.opts.ClusterName }

// Region is the account's region.
func (s *Sim) Region() string { return s.opts.Region }

// Zones are the region's zones, each offering every catalog type.
func (s *Sim) Zones() []fake.OfferingZone { return append([]fake.OfferingZone(nil), s.zones...) }

// KubernetesVersion is the version the AMIs are published for.
func (s *Sim) KubernetesVersion() string { return s.opts.KubernetesVersion }

// RoleName is the node IAM role, as the getting-started guide names it.
func (s *Sim) RoleName() string { return "KarpenterNodeRole-" + s.opts.ClusterName }

// InstanceProfileName is the instance profile the account has for RoleName.
func (s *Sim) InstanceProfileName() string {
	return "KarpenterNodeInstanceProfile-" + s.opts.ClusterName
}

// QueueName is the interruption queue, named like the cluster.
func (s *Sim) QueueName() string { return s.opts.ClusterName }

// PublishAMI releases a newer version of an EKS-optimized AMI alias
// ("al2023@latest", "bottlerocket@latest"): new images in EC2 and the
// alias's SSM parameters pointed at them, as AWS does on a release. It
// returns the new image ID per SSM parameter path.
func (s *Sim) PublishAMI(alias string) map[string]string {
	s.amiRelease = s.amiRelease.Add(24 * time.Hour)
	if now := s.opts.Clock.Now().Truncate(time.Second); s.amiRelease.After(now) {
		s.amiRelease = now
	}
	return amitest.Publish(s.EC2, s.SSM, alias, s.opts.KubernetesVersion, s.amiRelease)
}

// Instances returns every instance ever launched, terminated ones included,
// in launch order.
func (s *Sim) Instances() []ec2types.Instance { return s.EC2.Instances() }

// Instance returns the instance with the given ID.
func (s *Sim) Instance(id string) (ec2types.Instance, bool) {
	for _, inst := range s.EC2.Instances() {
		if aws.ToString(inst.InstanceId) == id {
			return inst, true
		}
	}
	return ec2types.Instance{}, false
}

// CreateLeakedInstance launches an on-demand instanceType in the first
// zone tagged as karp tags its instances for nodePool and nodeClass in this
// cluster, but with no NodeClaim: what a controller that died after
// CreateFleet, or a NodeClaim deleted behind karp's back, leaves behind.
func (s *Sim) CreateLeakedInstance(ctx context.Context, instanceType, nodePool, nodeClass string) (string, error) {
	name := fmt.Sprintf("leaked-%d", s.opts.Clock.Now().UnixNano())
	if _, err := s.EC2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-leaked")},
	}); err != nil {
		return "", err
	}
	tags := fake.Tags(map[string]string{
		awsv1.ClusterTagKey(s.opts.ClusterName): "owned",
		awsv1.TagEKSClusterName:                 s.opts.ClusterName,
		awsv1.TagNodePool:                       nodePool,
		awsv1.TagNodeClass:                      nodeClass,
	})
	out, err := s.EC2.CreateFleet(ctx, &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{{
				InstanceType: ec2types.InstanceType(instanceType), AvailabilityZone: aws.String(s.zones[0].Name), SubnetId: aws.String("subnet-private1"),
			}},
		}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tags}},
	})
	if _, delErr := s.EC2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(name)}); delErr != nil && err == nil {
		err = delErr
	}
	if err != nil {
		return "", err
	}
	if len(out.Instances) == 0 || len(out.Instances[0].InstanceIds) == 0 {
		return "", fmt.Errorf("launching a leaked %s: %v", instanceType, out.Errors)
	}
	return out.Instances[0].InstanceIds[0], nil
}

// regionCode is the zone-ID prefix of a region (us-west-2 → usw2).
func regionCode(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) != 3 {
		return region
	}
	return parts[0] + parts[1][:1] + parts[2]
}

// kubernetesMinor is the minor of "1.33", or 0.
func kubernetesMinor(version string) int {
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
		return 0
	}
	return minor
}
