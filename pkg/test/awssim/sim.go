package awssim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"k8s.io/utils/clock"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// Defaults of a Sim's account.
const (
	DefaultClusterName = "karp-local"
	DefaultRegion      = "us-west-2"
	// DiscoveryTagKey tags the subnets and security groups an EC2NodeClass
	// finds with the getting-started selectors.
	DiscoveryTagKey = fake.DiscoveryTagKey
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
// seeded by fake.NewAccount as a real account looks to the getting-started
// manifests (the
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
	// ARC holds the zonal shifts; the EKS cluster is a managed resource
	// (ClusterARN), with no shift until a test starts one.
	ARC *fake.ARC

	opts       Options
	zones      []fake.OfferingZone
	clusterARN string
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
	// The current AMIs were released a week ago; PublishAMI releases newer ones.
	amiRelease := opts.Clock.Now().Add(-7 * 24 * time.Hour).Truncate(time.Second)
	account, err := fake.NewAccount(accountOptions(opts, amiRelease))
	if err != nil {
		return nil, err
	}
	// Terminated instances stay shutting-down briefly, as in EC2.
	account.EC2.SetTerminationDelay(5 * time.Second)
	s := &Sim{
		EC2: account.EC2, SSM: account.SSM, IAM: account.IAM, Pricing: account.Pricing, EKS: account.EKS,
		opts: opts, zones: account.Zones, types: map[string]ec2types.InstanceTypeInfo{}, amiRelease: amiRelease,
		ssmDown: &outage{}, network: byte(rand.IntN(256)),
	}
	for _, info := range account.InstanceTypes {
		s.types[string(info.InstanceType)] = info
	}
	if err := s.seedQueue(ctx); err != nil {
		return nil, err
	}
	if err := s.seedZonalShift(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// seedZonalShift registers the EKS cluster with ARC zonal shift, as an
// account that turned it on for the cluster (what --enable-zonal-shift
// needs) has it.
func (s *Sim) seedZonalShift(ctx context.Context) error {
	out, err := s.EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(s.opts.ClusterName)})
	if err != nil {
		return fmt.Errorf("awssim: reading the cluster's ARN: %w", err)
	}
	s.clusterARN = aws.ToString(out.Cluster.Arn)
	s.ARC = fake.NewARC(s.opts.Clock)
	s.ARC.AddManagedResource(s.clusterARN)
	return nil
}

// ClusterARN is the EKS cluster's ARN, the resource ARC shifts.
func (s *Sim) ClusterARN() string { return s.clusterARN }

// StartZonalShift shifts the cluster away from a zone (by name) for d, as
// `aws arc-zonal-shift start-zonal-shift` does, and returns the shift's
// ID for CancelZonalShift.
func (s *Sim) StartZonalShift(zone string, d time.Duration) (string, error) {
	for _, z := range s.zones {
		if z.Name == zone {
			return s.ARC.StartZonalShift(s.clusterARN, z.ID, d), nil
		}
	}
	return "", fmt.Errorf("awssim: no zone %s in %s", zone, s.opts.Region)
}

// CancelZonalShift ends a zonal shift at once.
func (s *Sim) CancelZonalShift(id string) { s.ARC.CancelZonalShift(id) }

// accountOptions are the account of a Sim, as the getting-started guide
// leaves it: the catalog with spot and on-demand prices that fleets fill
// at; in each zone a private subnet tagged for discovery and an alternate
// one, the node security group and an alternate one; the AL2023 and
// Bottlerocket AMIs (and AL2 before Kubernetes 1.33, its last); the node
// role with its instance profile; and the EKS cluster.
func accountOptions(opts Options, amiRelease time.Time) fake.AccountOptions {
	amis := []string{"al2023@latest", "bottlerocket@latest"}
	if minor := kubernetesMinor(opts.KubernetesVersion); minor > 0 && minor < 33 {
		amis = append(amis, "al2@latest")
	}
	return fake.AccountOptions{
		Region: opts.Region, ClusterName: opts.ClusterName, Clock: opts.Clock,
		SpotPrices: true, CatalogFleetPrices: true,
		Network: fake.Network{
			SubnetIDs: []string{"subnet-private1", "subnet-private2", "subnet-private3"}, FreeIPs: 8000,
			SecurityGroupName: opts.ClusterName + "-node", NameTags: true, Alternates: true,
		},
		AMIs: amis, KubernetesVersion: opts.KubernetesVersion, AMIRelease: amiRelease,
		NodeRole: roleName(opts.ClusterName), InstanceProfile: instanceProfileName(opts.ClusterName),
		EKSCluster: &fake.EKSCluster{Endpoint: opts.ClusterEndpoint, CABundle: opts.CABundle},
	}
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
func (s *Sim) RoleName() string { return roleName(s.opts.ClusterName) }

// InstanceProfileName is the instance profile the account has for RoleName.
func (s *Sim) InstanceProfileName() string { return instanceProfileName(s.opts.ClusterName) }

func roleName(cluster string) string { return "KarpenterNodeRole-" + cluster }

func instanceProfileName(cluster string) string { return "KarpenterNodeInstanceProfile-" + cluster }

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
	return fake.PublishAMI(s.EC2, s.SSM, alias, s.opts.KubernetesVersion, s.amiRelease)
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

// kubernetesMinor is the minor of "1.33", or 0.
func kubernetesMinor(version string) int {
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
		return 0
	}
	return minor
}
