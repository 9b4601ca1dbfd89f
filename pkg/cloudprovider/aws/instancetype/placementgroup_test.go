package instancetype_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
)

func usable(it *cloudprovider.InstanceType) int {
	n := 0
	for _, o := range it.Offerings {
		if o.Usable() {
			n++
		}
	}
	return n
}

// A class's placement group is a requirement of every instance type (its
// ID, and a partition group's partitions), and types that do not support
// the group's strategy have no usable offering (a cluster group takes no
// burstable type). Without a group, neither label is defined.
func TestPlacementGroupRequirementsAndCompatibility(t *testing.T) {
	e := newEnv(t, nil)
	for name, tc := range map[string]struct {
		group          *awsv1.PlacementGroup
		wantID         []string
		wantPartitions []string
		burstable      bool
	}{
		"no group": {burstable: true},
		"cluster": {
			group:  &awsv1.PlacementGroup{ID: "pg-0a1", Name: "training", Strategy: awsv1.PlacementGroupStrategyCluster},
			wantID: []string{"pg-0a1"},
		},
		"partition": {
			group:          &awsv1.PlacementGroup{ID: "pg-0b2", Name: "kafka", Strategy: awsv1.PlacementGroupStrategyPartition, PartitionCount: 3},
			wantID:         []string{"pg-0b2"},
			wantPartitions: []string{"1", "2", "3"},
			burstable:      true,
		},
		"spread": {
			group:     &awsv1.PlacementGroup{ID: "pg-0c3", Name: "etcd", Strategy: awsv1.PlacementGroupStrategySpread, SpreadLevel: "rack"},
			wantID:    []string{"pg-0c3"},
			burstable: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			nc := nodeClass()
			nc.Status.PlacementGroup = tc.group
			types, err := e.provider.List(t.Context(), nc)
			if err != nil {
				t.Fatal(err)
			}
			m5 := find(t, types, "m5.large")
			for key, want := range map[string][]string{awsv1.LabelPlacementGroupID: tc.wantID, awsv1.LabelPlacementGroupPartition: tc.wantPartitions} {
				var got []string
				if r := m5.Requirements.Get(key); r != nil {
					got = r.Values()
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("m5.large %s (-want,+got):\n%s", key, diff)
				}
			}
			if usable(m5) == 0 {
				t.Errorf("m5.large has no usable offering")
			}
			if got := usable(find(t, types, "t3.large")) > 0; got != tc.burstable {
				t.Errorf("t3.large usable = %v, want %v", got, tc.burstable)
			}
		})
	}
}
