package zonalshift_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/pricing"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/zonalshift"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/instancetypes"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

const (
	region      = "us-west-2"
	clusterName = "test-cluster"
)

var (
	now   = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	zones = fake.RegionZones(region) // us-west-2a/b/c: usw2-az1/2/3
)

// clusterARN is the ARN the EKS fake reports for clusterName.
func clusterARN(t *testing.T, eks *fake.EKS) string {
	t.Helper()
	out, err := eks.DescribeCluster(t.Context(), describeInput())
	if err != nil {
		t.Fatal(err)
	}
	return *out.Cluster.Arn
}

func describeInput() *eks.DescribeClusterInput {
	name := clusterName
	return &eks.DescribeClusterInput{Name: &name}
}

func TestNewProviderRefusesAClusterNotManagedByZonalShift(t *testing.T) {
	clk := clocktesting.NewFakeClock(now)
	eks, arc := fake.NewEKS(), fake.NewARC(clk)
	eks.PutCluster(clusterName, "https://example", "")
	sink := cache.NewUnavailableOfferings(clk)
	tests := map[string]struct {
		arc     zonalshift.ARCAPI
		eks     *fake.EKS
		wantErr string
	}{
		"not registered":  {arc: arc, eks: eks, wantErr: "must be registered with ARC zonal shift"},
		"no ARC client":   {arc: nil, eks: eks, wantErr: "needs an ARC zonal shift client"},
		"no such cluster": {arc: arc, eks: fake.NewEKS(), wantErr: "eks:DescribeCluster"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := zonalshift.NewProvider(t.Context(), tc.arc, tc.eks, clusterName, sink, clk)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("NewProvider error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	if arc.Calls("GetManagedResource") != 1 {
		t.Errorf("%d GetManagedResource calls, want 1 (the registered-cluster check)", arc.Calls("GetManagedResource"))
	}
}

// A shift makes every offering of its zone unavailable, on-demand, spot
// and reserved; it clears when ARC stops listing it (cancelled) or when its
// expiry passes between two reads.
func TestShiftedZoneOfferingsAreUnavailableUntilTheShiftEnds(t *testing.T) {
	clk := clocktesting.NewFakeClock(now)
	ec2, eks, arc := fake.NewEC2(), fake.NewEKS(), fake.NewARC(clk)
	infos, err := fake.CatalogInstanceTypes(instancetypes.EC2)
	if err != nil {
		t.Fatal(err)
	}
	ec2.SeedCatalog(infos, zones...)
	eks.PutCluster(clusterName, "https://example", "")
	arn := clusterARN(t, eks)
	arc.AddManagedResource(arn)
	unavailable := cache.NewUnavailableOfferings(clk)
	prices, err := pricing.NewProvider(ec2, fake.NewPricing(), region, true, clk)
	if err != nil {
		t.Fatal(err)
	}
	types := instancetype.NewProvider(ec2, prices, unavailable, nil, instancetype.Options{Region: region}, clk)
	if err := types.Update(t.Context()); err != nil {
		t.Fatal(err)
	}
	nodeClass := &awsv1.EC2NodeClass{}
	nodeClass.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	for i, z := range zones {
		nodeClass.Status.Subnets = append(nodeClass.Status.Subnets, awsv1.Subnet{ID: "subnet-" + z.Name, Zone: z.Name, ZoneID: z.ID})
		if i == 0 {
			nodeClass.Status.CapacityReservations = []awsv1.CapacityReservation{{
				ID: "cr-a", InstanceType: "m5.large", AvailabilityZone: z.Name, OwnerID: "111122223333",
				InstanceMatchCriteria: "targeted", ReservationType: awsv1.CapacityReservationTypeDefault, State: "active",
			}}
		}
	}
	// availableZones are the zones where m5.large has an available
	// offering of any capacity type.
	availableZones := func() []string {
		t.Helper()
		list, err := types.List(t.Context(), nodeClass)
		if err != nil {
			t.Fatal(err)
		}
		out := sets.New[string]()
		for _, it := range list {
			if it.Name != "m5.large" {
				continue
			}
			for _, o := range it.Offerings {
				if o.Available {
					out.Insert(o.Zone)
				}
			}
			if !hasCapacityType(it.Offerings, "reserved") {
				t.Fatal("m5.large has no reserved offering: the reservation did not resolve")
			}
		}
		return sets.List(out)
	}
	all := []string{zones[0].Name, zones[1].Name, zones[2].Name}

	p, err := zonalshift.NewProvider(t.Context(), arc, eks, clusterName, unavailable, clk)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all, availableZones()); diff != "" {
		t.Fatalf("no shift: available zones (-want,+got):\n%s", diff)
	}
	// 1. Applied: zone a (usw2-az1) offers nothing. A shift ARC did not
	// apply shifts nothing.
	shift := arc.StartZonalShift(arn, zones[0].ID, time.Hour)
	arc.StartUnappliedZonalShift(arn, zones[1].ID, time.Hour)
	if err := p.Update(t.Context()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all[1:], availableZones()); diff != "" {
		t.Errorf("zone a shifted: available zones (-want,+got):\n%s", diff)
	}
	if got := sets.List(p.ShiftedZones()); !cmp.Equal(got, []string{zones[0].ID}) {
		t.Errorf("ShiftedZones() = %v, want [%s]", got, zones[0].ID)
	}
	// 2. Cancelled: zone a offers again after the next read.
	arc.CancelZonalShift(shift)
	if err := p.Update(t.Context()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all, availableZones()); diff != "" {
		t.Errorf("shift cancelled: available zones (-want,+got):\n%s", diff)
	}
	// 3. Expired: a 10-minute shift of zone c ends without another read.
	arc.StartZonalShift(arn, zones[2].ID, 10*time.Minute)
	if err := p.Update(t.Context()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all[:2], availableZones()); diff != "" {
		t.Errorf("zone c shifted: available zones (-want,+got):\n%s", diff)
	}
	clk.Step(10 * time.Minute)
	if diff := cmp.Diff(all, availableZones()); diff != "" {
		t.Errorf("zone c's shift expired: available zones (-want,+got):\n%s", diff)
	}
	if got := p.ShiftedZones(); got.Len() != 0 {
		t.Errorf("ShiftedZones() = %v after the shift expired, want none", sets.List(got))
	}
	// 4. A failed read keeps the shifts known.
	arc.StartZonalShift(arn, zones[1].ID, time.Hour)
	if err := p.Update(t.Context()); err != nil {
		t.Fatal(err)
	}
	arc.FailNext("GetManagedResource", 1, fake.Throttling("GetManagedResource"))
	if err := p.Update(t.Context()); err == nil {
		t.Error("a failed GetManagedResource returned no error")
	}
	if diff := cmp.Diff([]string{all[0], all[2]}, availableZones()); diff != "" {
		t.Errorf("zone b shifted, read failed: available zones (-want,+got):\n%s", diff)
	}
}

func hasCapacityType(offerings []*cloudprovider.Offering, capacityType string) bool {
	for _, o := range offerings {
		if o.CapacityType == capacityType {
			return true
		}
	}
	return false
}
