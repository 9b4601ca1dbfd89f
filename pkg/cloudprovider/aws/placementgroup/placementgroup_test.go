package placementgroup_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/placementgroup"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

func nodeClass(sel *awsv1.PlacementGroupSelector) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "uid-1", Generation: 1},
		Spec:       awsv1.EC2NodeClassSpec{PlacementGroupSelector: sel},
	}
}

func groups() *fake.EC2 {
	e := fake.NewEC2()
	e.AddPlacementGroups(
		fake.NewPlacementGroup("pg-0a1", "training", ec2types.PlacementStrategyCluster, 0),
		fake.NewPlacementGroup("pg-0b2", "kafka", ec2types.PlacementStrategyPartition, 3),
		fake.NewPlacementGroup("pg-0c3", "etcd", ec2types.PlacementStrategySpread, 0),
	)
	return e
}

func TestResolveByNameOrID(t *testing.T) {
	for name, tc := range map[string]struct {
		sel  *awsv1.PlacementGroupSelector
		want *awsv1.PlacementGroup
	}{
		"no selector resolves nothing": {},
		"by name, a cluster group": {
			sel:  &awsv1.PlacementGroupSelector{Name: aws.String("training")},
			want: &awsv1.PlacementGroup{ID: "pg-0a1", Name: "training", Strategy: awsv1.PlacementGroupStrategyCluster},
		},
		"by id, a partition group with its partitions": {
			sel:  &awsv1.PlacementGroupSelector{ID: aws.String("pg-0b2")},
			want: &awsv1.PlacementGroup{ID: "pg-0b2", Name: "kafka", Strategy: awsv1.PlacementGroupStrategyPartition, PartitionCount: 3},
		},
		"by name, a spread group with its level": {
			sel:  &awsv1.PlacementGroupSelector{Name: aws.String("etcd")},
			want: &awsv1.PlacementGroup{ID: "pg-0c3", Name: "etcd", Strategy: awsv1.PlacementGroupStrategySpread, SpreadLevel: "rack"},
		},
		"an unknown name is not found":   {sel: &awsv1.PlacementGroupSelector{Name: aws.String("nope")}},
		"an unknown id is not found":     {sel: &awsv1.PlacementGroupSelector{ID: aws.String("pg-0ff")}},
		"a name is not matched as an id": {sel: &awsv1.PlacementGroupSelector{ID: aws.String("pg-training")}},
	} {
		t.Run(name, func(t *testing.T) {
			p := placementgroup.NewProvider(groups(), clocktesting.NewFakeClock(time.Now()))
			got, err := p.Resolve(t.Context(), nodeClass(tc.sel))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Resolve (-want,+got):\n%s", diff)
			}
		})
	}
}

// A deleted group is filtered out by state (EC2 lists it for a while).
func TestResolveIgnoresDeletedGroups(t *testing.T) {
	e := groups()
	e.DeletePlacementGroup("pg-0a1")
	p := placementgroup.NewProvider(e, clocktesting.NewFakeClock(time.Now()))
	got, err := p.Resolve(t.Context(), nodeClass(&awsv1.PlacementGroupSelector{Name: aws.String("training")}))
	if err != nil || got != nil {
		t.Errorf("Resolve = %+v, %v; want nil, nil for a deleted group", got, err)
	}
}

// Answers are reused for CacheTTL, then EC2 is asked again: a group
// recreated under the same name is seen with its new ID.
func TestResolveCachesForTTL(t *testing.T) {
	e := groups()
	clk := clocktesting.NewFakeClock(time.Now())
	p := placementgroup.NewProvider(e, clk)
	nc := nodeClass(&awsv1.PlacementGroupSelector{Name: aws.String("training")})
	if _, err := p.Resolve(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	e.DeletePlacementGroup("pg-0a1")
	e.AddPlacementGroups(fake.NewPlacementGroup("pg-0d4", "training", ec2types.PlacementStrategyCluster, 0))
	got, _ := p.Resolve(t.Context(), nc)
	if got == nil || got.ID != "pg-0a1" || e.Calls("DescribePlacementGroups") != 1 {
		t.Fatalf("within the TTL: got %+v after %d calls, want the cached pg-0a1 after 1", got, e.Calls("DescribePlacementGroups"))
	}
	clk.Step(placementgroup.CacheTTL + time.Second)
	got, _ = p.Resolve(t.Context(), nc)
	if got == nil || got.ID != "pg-0d4" {
		t.Errorf("after the TTL: got %+v, want the recreated pg-0d4", got)
	}
}

// An API failure is returned, not read as "not found", and not cached.
func TestResolveReturnsAPIErrors(t *testing.T) {
	e := groups()
	e.FailNext("DescribePlacementGroups", 1, fake.APIError("RequestLimitExceeded", "slow down"))
	p := placementgroup.NewProvider(e, clocktesting.NewFakeClock(time.Now()))
	nc := nodeClass(&awsv1.PlacementGroupSelector{Name: aws.String("training")})
	if got, err := p.Resolve(t.Context(), nc); err == nil || got != nil {
		t.Fatalf("Resolve = %+v, %v; want the API error", got, err)
	}
	if got, err := p.Resolve(t.Context(), nc); err != nil || got == nil || got.ID != "pg-0a1" {
		t.Errorf("retry = %+v, %v; want pg-0a1", got, err)
	}
}

func TestQueryAsUpstream(t *testing.T) {
	in := placementgroup.Query(&awsv1.PlacementGroupSelector{ID: aws.String("pg-1")})
	if diff := cmp.Diff([]string{"pg-1"}, in.GroupIds); diff != "" || len(in.GroupNames) != 0 {
		t.Errorf("by id: GroupIds diff %s, GroupNames %v", diff, in.GroupNames)
	}
	in = placementgroup.Query(&awsv1.PlacementGroupSelector{Name: aws.String("a")})
	if diff := cmp.Diff([]string{"a"}, in.GroupNames); diff != "" || len(in.GroupIds) != 0 {
		t.Errorf("by name: GroupNames diff %s, GroupIds %v", diff, in.GroupIds)
	}
	if len(in.Filters) != 1 || aws.ToString(in.Filters[0].Name) != "state" || !cmp.Equal(in.Filters[0].Values, []string{"available"}) {
		t.Errorf("filters = %+v, want state=available", in.Filters)
	}
}
