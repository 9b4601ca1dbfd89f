package fake

import (
	"errors"
	"fmt"
	"strings"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
)

// DiscoveryTagKey tags the subnets and security groups an EC2NodeClass
// finds with the getting-started selectors (value: the cluster's name).
const DiscoveryTagKey = "karpenter.sh/discovery"

// Account is a simulated AWS account: the fakes of one region, seeded by
// NewAccount.
type Account struct {
	EC2     *EC2
	SSM     *SSM
	IAM     *IAM
	Pricing *Pricing
	EKS     *EKS
	// Zones are the region's zones (RegionZones), each offering every type
	// of the catalog.
	Zones []OfferingZone
	// InstanceTypes are the catalog's instance types as EC2 describes them.
	InstanceTypes []ec2types.InstanceTypeInfo
}

// AccountOptions say what NewAccount puts in the account beyond the
// catalog and its on-demand prices, which every account has. The zero value
// of each option adds nothing, so a caller asks for what its tests rely on.
type AccountOptions struct {
	// Region is the account's region (required): the on-demand prices are
	// its, and its zones (RegionZones) offer every catalog type.
	Region string
	// ClusterName is the value of the discovery tags, the prefix of the
	// resources' Name tags and the name of the EKS cluster.
	ClusterName string
	// Clock stamps the spot prices and EC2's launches (default real).
	Clock clock.Clock

	// SpotPrices records the spot price karp's catalog model derives for
	// every priced type in every zone, in effect from an hour ago.
	SpotPrices bool
	// CatalogFleetPrices makes EC2 fill fleets at the catalog's prices (the
	// on-demand price, or the spot price SpotPrices records); without it a
	// fleet's pools are unpriced until the caller sets a pricer.
	CatalogFleetPrices bool

	// Network is the VPC: subnets and security groups.
	Network Network

	// AMIs are the EKS-optimized AMI aliases ("al2023@latest") published
	// for KubernetesVersion ("1.33"), released at AMIRelease, behind their
	// SSM parameters (PublishAMI).
	AMIs              []string
	KubernetesVersion string
	AMIRelease        time.Time

	// NodeRole is an IAM role the account has; InstanceProfile, when set,
	// is an instance profile with NodeRole attached.
	NodeRole        string
	InstanceProfile string

	// EKSCluster, when set, is the cluster ClusterName that
	// eks:DescribeCluster reports; otherwise EKS knows no cluster.
	EKSCluster *EKSCluster
}

// EKSCluster is what eks:DescribeCluster reports of the account's cluster.
type EKSCluster struct {
	// Endpoint is the cluster's API server URL and CABundle its base64 PEM
	// certificate authority.
	Endpoint string
	CABundle string
}

// Network is the VPC NewAccount adds: in every zone a subnet tagged
// DiscoveryTagKey=<ClusterName>, and the node security group sg-nodes
// tagged alike. The zero Network adds none.
type Network struct {
	// SubnetIDs are the discoverable subnets' IDs, one per zone in order.
	SubnetIDs []string
	// FreeIPs is how many IPv4 addresses each subnet has free.
	FreeIPs int32
	// SecurityGroupName names the node security group; none when empty.
	SecurityGroupName string
	// NameTags tag each resource with a Name: <cluster>-private-<zone> for
	// a subnet, SecurityGroupName for the group.
	NameTags bool
	// Alternates adds a subnet per zone (subnet-alternate<n>) and a security
	// group (sg-alternate) not tagged for discovery but karp.sh/tier=
	// alternate, with Name tags <cluster>-alternate[-<zone>]: where a
	// selector change can move nodes.
	Alternates bool
}

// NewAccount seeds an account: the embedded EC2 catalog offered in every
// zone of the region with its on-demand prices in the Price List API, and
// what opts add.
func NewAccount(opts AccountOptions) (*Account, error) {
	if opts.Region == "" {
		return nil, errors.New("an account needs a region")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	a := &Account{
		EC2: NewEC2(), SSM: NewSSM(), IAM: NewIAM(), Pricing: NewPricing(), EKS: NewEKS(),
		Zones: RegionZones(opts.Region),
	}
	if err := a.seedCatalog(opts); err != nil {
		return nil, err
	}
	a.seedNetwork(opts.ClusterName, opts.Network)
	for _, alias := range opts.AMIs {
		PublishAMI(a.EC2, a.SSM, alias, opts.KubernetesVersion, opts.AMIRelease)
	}
	switch {
	case opts.InstanceProfile != "":
		a.IAM.AddInstanceProfile(opts.InstanceProfile, opts.NodeRole)
	case opts.NodeRole != "":
		a.IAM.AddRole(opts.NodeRole)
	}
	if opts.EKSCluster != nil {
		a.EKS.PutCluster(opts.ClusterName, opts.EKSCluster.Endpoint, opts.EKSCluster.CABundle)
	}
	return a, nil
}

// seedCatalog offers the catalog in every zone, publishes its on-demand
// prices and, as opts ask, its spot prices and the fleets' prices.
func (a *Account) seedCatalog(opts AccountOptions) error {
	infos, err := CatalogInstanceTypes(instancetypes.EC2)
	if err != nil {
		return fmt.Errorf("loading the EC2 catalog: %w", err)
	}
	a.InstanceTypes = infos
	a.EC2.SeedCatalog(infos, a.Zones...)
	if opts.SpotPrices {
		if err := a.EC2.SeedCatalogSpotPrices(instancetypes.EC2, a.Zones, opts.Clock.Now().Add(-time.Hour)); err != nil {
			return fmt.Errorf("seeding spot prices: %w", err)
		}
	}
	if err := a.Pricing.SeedCatalogOnDemandPrices(opts.Region, instancetypes.EC2); err != nil {
		return fmt.Errorf("seeding on-demand prices: %w", err)
	}
	if opts.CatalogFleetPrices {
		onDemand, err := CatalogOnDemandPrices(instancetypes.EC2)
		if err != nil {
			return err
		}
		catalogOpts := catalog.DefaultOptions()
		a.EC2.SetPricer(func(pool CapacityPool) (float64, bool) {
			price, ok := onDemand[pool.InstanceType]
			if !ok {
				return 0, false
			}
			if pool.CapacityType == karpv1.CapacityTypeSpot {
				return catalog.SpotPrice(pool.InstanceType, pool.Zone, price, catalogOpts), true
			}
			return price, true
		})
	}
	a.EC2.SetLaunchClock(opts.Clock)
	return nil
}

// seedNetwork adds the subnets and security groups of net.
func (a *Account) seedNetwork(cluster string, net Network) {
	discovery := map[string]string{DiscoveryTagKey: cluster}
	named := func(name string) map[string]string {
		if !net.NameTags {
			return discovery
		}
		return withName(discovery, name)
	}
	for i, id := range net.SubnetIDs {
		if i >= len(a.Zones) {
			break
		}
		z := a.Zones[i]
		a.EC2.AddSubnets(NewSubnet(id, z.Name, z.ID, net.FreeIPs, named(fmt.Sprintf("%s-private-%s", cluster, z.Name))))
		if net.Alternates {
			a.EC2.AddSubnets(NewSubnet(fmt.Sprintf("subnet-alternate%d", i+1), z.Name, z.ID, net.FreeIPs, alternate(fmt.Sprintf("%s-alternate-%s", cluster, z.Name))))
		}
	}
	if net.SecurityGroupName != "" {
		a.EC2.AddSecurityGroups(NewSecurityGroup("sg-nodes", net.SecurityGroupName, named(net.SecurityGroupName)))
	}
	if net.Alternates {
		a.EC2.AddSecurityGroups(NewSecurityGroup("sg-alternate", cluster+"-alternate", alternate(cluster+"-alternate")))
	}
}

// alternate are the tags of a resource outside discovery that a selector
// of karp.sh/tier=alternate finds.
func alternate(name string) map[string]string {
	return map[string]string{"Name": name, "karp.sh/tier": "alternate"}
}

func withName(tags map[string]string, name string) map[string]string {
	out := map[string]string{"Name": name}
	for k, v := range tags {
		out[k] = v
	}
	return out
}

// RegionZones are zones a, b and c of region, with the zone IDs AWS
// gives them (us-west-2a is usw2-az1).
func RegionZones(region string) []OfferingZone {
	var zones []OfferingZone
	for i, suffix := range []string{"a", "b", "c"} {
		zones = append(zones, OfferingZone{Name: region + suffix, ID: fmt.Sprintf("%s-az%d", regionCode(region), i+1)})
	}
	return zones
}

// regionCode is the zone-ID prefix of a region (us-west-2 → usw2).
func regionCode(region string) string {
	parts := strings.Split(region, "-")
	if len(parts) != 3 {
		return region
	}
	return parts[0] + parts[1][:1] + parts[2]
}
