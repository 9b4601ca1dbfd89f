package nodeclass_test

import (
	"testing"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/placementgroup"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// The selector resolves by name or ID into status.placementGroup, and
// PlacementGroupReady (and Ready) are True; a selector that matches no
// available group is PlacementGroupReady=False/PlacementGroupNotFound,
// which makes the class not Ready.
func TestPlacementGroupDiscovery(t *testing.T) {
	for name, tc := range map[string]struct {
		sel        *awsv1.PlacementGroupSelector
		want       *awsv1.PlacementGroup
		wantReason string
	}{
		"no selector": {},
		"by name": {
			sel:  &awsv1.PlacementGroupSelector{Name: ptr("training")},
			want: &awsv1.PlacementGroup{ID: "pg-0a1", Name: "training", Strategy: awsv1.PlacementGroupStrategyCluster},
		},
		"by id": {
			sel:  &awsv1.PlacementGroupSelector{ID: ptr("pg-0b2")},
			want: &awsv1.PlacementGroup{ID: "pg-0b2", Name: "kafka", Strategy: awsv1.PlacementGroupStrategyPartition, PartitionCount: 3},
		},
		"an unknown name": {sel: &awsv1.PlacementGroupSelector{Name: ptr("missing")}, wantReason: awsv1.ConditionReasonPlacementGroupNotFound},
		"an unknown id":   {sel: &awsv1.PlacementGroupSelector{ID: ptr("pg-0ff")}, wantReason: awsv1.ConditionReasonPlacementGroupNotFound},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			nc := nodeClass()
			nc.Spec.PlacementGroupSelector = tc.sel
			create(t, nc)
			_, got := w.mustReconcile(t, nc.Name)
			if diff := cmp.Diff(tc.want, got.Status.PlacementGroup); diff != "" {
				t.Errorf("status.placementGroup (-want,+got):\n%s", diff)
			}
			pg, ready := condition(t, got, awsv1.ConditionTypePlacementGroupReady), condition(t, got, awsv1.ConditionTypeReady)
			if tc.wantReason == "" {
				if pg.Status != metav1.ConditionTrue || ready.Status != metav1.ConditionTrue {
					t.Errorf("PlacementGroupReady %+v, Ready %+v; want both True", pg, ready)
				}
				return
			}
			if pg.Status != metav1.ConditionFalse || pg.Reason != tc.wantReason || !contains(pg.Message, "not found") {
				t.Errorf("PlacementGroupReady = %+v, want False/%s", pg, tc.wantReason)
			}
			if ready.Status != metav1.ConditionFalse {
				t.Errorf("Ready = %+v, want False while the placement group is not found", ready)
			}
		})
	}
}

// An EC2 failure is PlacementGroupReady=False/PlacementGroupResolutionFailed
// (upstream's) and a reconcile error; the group resolved before stays in
// the status, and the next successful resolution makes the class Ready
// again. A group recreated under the same name is picked up with its new ID
// once the cache expires.
func TestPlacementGroupResolutionFailureAndRecreation(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass()
	nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelector{Name: ptr("training")}
	create(t, nc)
	w.mustReconcile(t, nc.Name)

	h.Clock.Step(placementgroup.CacheTTL + time.Second)
	w.ec2.FailNext("DescribePlacementGroups", 1, fake.APIError("UnauthorizedOperation", "not allowed"))
	_, got, err := w.reconcile(t, nc.Name)
	if err == nil {
		t.Fatal("reconcile succeeded, want the DescribePlacementGroups error")
	}
	pg := condition(t, got, awsv1.ConditionTypePlacementGroupReady)
	if pg.Status != metav1.ConditionFalse || pg.Reason != awsv1.ConditionReasonPlacementGroupResolutionFailed || !contains(pg.Message, "UnauthorizedOperation") {
		t.Errorf("PlacementGroupReady = %+v, want False/PlacementGroupResolutionFailed naming the error", pg)
	}
	if got.Status.PlacementGroup == nil || got.Status.PlacementGroup.ID != "pg-0a1" {
		t.Errorf("status.placementGroup = %+v, want pg-0a1 kept", got.Status.PlacementGroup)
	}

	w.ec2.DeletePlacementGroup("pg-0a1")
	w.ec2.AddPlacementGroups(fake.NewPlacementGroup("pg-0c3", "training", ec2types.PlacementStrategySpread, 0))
	_, got = w.mustReconcile(t, nc.Name)
	if got.Status.PlacementGroup == nil || got.Status.PlacementGroup.ID != "pg-0c3" || got.Status.PlacementGroup.Strategy != awsv1.PlacementGroupStrategySpread {
		t.Errorf("status.placementGroup = %+v, want the recreated pg-0c3 (spread)", got.Status.PlacementGroup)
	}
	if c := condition(t, got, awsv1.ConditionTypeReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready = %+v, want True again", c)
	}
}
