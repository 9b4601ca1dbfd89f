package aws_test

import (
	"sync"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// reservationLog records what launches tell the reservation tracker.
type reservationLog struct {
	mu          sync.Mutex
	launched    []string
	terminated  []string
	unavailable []string
}

func (r *reservationLog) MarkTerminated(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.terminated = append(r.terminated, id)
}

func (r *reservationLog) MarkLaunched(id string, _ time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.launched = append(r.launched, id)
}

func (r *reservationLog) MarkUnavailable(ids ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unavailable = append(r.unavailable, ids...)
}

func TestLaunchIntoACapacityReservation(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	nodeClass.Status.CapacityReservations = []awsv1.CapacityReservation{{
		ID: "cr-0123456789abcdef0", AvailabilityZone: zones[0].Name, InstanceType: "m5.large",
		InstanceMatchCriteria: "targeted", OwnerID: "123456789012", ReservationType: "default", State: "active",
	}}
	if err := env.Client.Status().Update(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	w.EC2.AddCapacityReservations(fake.NewCapacityReservation("cr-0123456789abcdef0", "m5.large", zones[0].Name, 1, nil))
	log := &reservationLog{}
	provider := w.Provider.WithReservations(log)

	// The reserved offering is the cheapest: the NodeClaim launches into it.
	created, err := provider.Create(ctx, newNodeClaim("reserved", nodeClass.Name))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		karpv1.CapacityTypeLabelKey:      karpv1.CapacityTypeReserved,
		scheduling.LabelReservationID:    "cr-0123456789abcdef0",
		awsv1.LabelCapacityReservationID: "cr-0123456789abcdef0",
		corev1.LabelInstanceTypeStable:   "m5.large",
		corev1.LabelTopologyZone:         zones[0].Name,
	}
	for k, v := range want {
		if created.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, created.Labels[k], v)
		}
	}
	in := w.EC2.CreateFleetInputs()[0]
	if in.TargetCapacitySpecification.DefaultTargetCapacityType != ec2types.DefaultTargetCapacityTypeOnDemand || len(in.LaunchTemplateConfigs) != 1 || len(in.LaunchTemplateConfigs[0].Overrides) != 1 {
		t.Errorf("reserved fleet %+v, want one on-demand override", in.LaunchTemplateConfigs)
	}
	data, _ := w.EC2.LaunchTemplateData(awssdk.ToString(in.LaunchTemplateConfigs[0].LaunchTemplateSpecification.LaunchTemplateName))
	if spec := data.CapacityReservationSpecification; spec == nil || spec.CapacityReservationPreference != ec2types.CapacityReservationPreferenceCapacityReservationsOnly ||
		awssdk.ToString(spec.CapacityReservationTarget.CapacityReservationId) != "cr-0123456789abcdef0" {
		t.Errorf("launch template reservation %+v, want capacity-reservations-only targeting cr-0123456789abcdef0", spec)
	}
	// A fresh process sees the instance as reserved too.
	got, err := w.Restart(t).Get(ctx, created.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeReserved || got.Labels[awsv1.LabelCapacityReservationID] != "cr-0123456789abcdef0" {
		t.Errorf("Get labels %v, want reserved in cr-0123456789abcdef0", got.Labels)
	}

	// The reservation is full now: the next launch is refused as
	// insufficient capacity and the reservation marked unavailable.
	_, err = provider.Create(ctx, newNodeClaim("full", nodeClass.Name))
	if !cloudprovider.IsInsufficientCapacityError(err) {
		t.Errorf("Create into a full reservation returned %v, want an InsufficientCapacityError", err)
	}
	// Deleting the reserved NodeClaim frees its place once the instance
	// is gone.
	launched := newNodeClaim("reserved", nodeClass.Name)
	launched.Labels, launched.Status = created.Labels, created.Status
	if err := provider.Delete(ctx, launched); err != nil {
		t.Fatal(err)
	}
	if err := provider.Delete(ctx, launched); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("second Delete returned %v, want NodeClaimNotFound", err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.launched) != 1 || len(log.unavailable) != 1 || log.unavailable[0] != "cr-0123456789abcdef0" {
		t.Errorf("reservation tracker saw launched %v, unavailable %v; want one launch then the reservation unavailable", log.launched, log.unavailable)
	}
	if len(log.terminated) != 1 || log.terminated[0] != "cr-0123456789abcdef0" {
		t.Errorf("reservation tracker saw terminated %v, want the reservation once", log.terminated)
	}
}
