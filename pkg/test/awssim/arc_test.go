package awssim

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/arczonalshift"
	arctypes "github.com/aws/aws-sdk-go-v2/service/arczonalshift/types"
)

// TestZonalShiftOverTheWire reads the cluster's zonal shifts as the
// controller does: the SDK's ARC client from the default configuration
// the Sim's Env gives, GetManagedResource on the cluster's ARN.
func TestZonalShiftOverTheWire(t *testing.T) {
	ctx := t.Context()
	s := newTestSim(t)
	if _, err := s.Serve(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	arc := arczonalshift.NewFromConfig(cfg)
	get := func() *arczonalshift.GetManagedResourceOutput {
		t.Helper()
		out, err := arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String(s.ClusterARN())})
		if err != nil {
			t.Fatalf("GetManagedResource: %v", err)
		}
		return out
	}

	// 1. The cluster is registered, with no shift.
	if !strings.HasPrefix(s.ClusterARN(), "arn:aws:eks:") || !strings.HasSuffix(s.ClusterARN(), ":cluster/"+DefaultClusterName) {
		t.Fatalf("cluster ARN %q", s.ClusterARN())
	}
	if out := get(); aws.ToString(out.Arn) != s.ClusterARN() || len(out.ZonalShifts) != 0 {
		t.Fatalf("no shift yet: arn %q, shifts %+v", aws.ToString(out.Arn), out.ZonalShifts)
	}

	// 2. A shift away from the second zone reads back by zone ID, applied,
	// with its times.
	zone := s.Zones()[1]
	id, err := s.StartZonalShift(zone.Name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out := get()
	if len(out.ZonalShifts) != 1 {
		t.Fatalf("shifts %+v, want one", out.ZonalShifts)
	}
	got := out.ZonalShifts[0]
	now := s.opts.Clock.Now()
	if aws.ToString(got.ZonalShiftId) != id || aws.ToString(got.AwayFrom) != zone.ID || got.AppliedStatus != arctypes.AppliedStatusApplied ||
		aws.ToString(got.ResourceIdentifier) != s.ClusterARN() || !aws.ToTime(got.StartTime).Equal(now) || !aws.ToTime(got.ExpiryTime).Equal(now.Add(time.Hour)) {
		t.Errorf("shift %+v (start %v, expiry %v), want %s away from %s, applied, from %v for an hour",
			got, aws.ToTime(got.StartTime), aws.ToTime(got.ExpiryTime), id, zone.ID, now)
	}
	if _, err := s.StartZonalShift("us-west-2z", time.Hour); err == nil {
		t.Error("a shift away from a zone the region lacks was started")
	}

	// 3. Cancelled, it is gone.
	s.CancelZonalShift(id)
	if out := get(); len(out.ZonalShifts) != 0 {
		t.Errorf("after the cancellation: shifts %+v", out.ZonalShifts)
	}

	// 4. A resource not registered is ARC's ResourceNotFoundException.
	_, err = arc.GetManagedResource(ctx, &arczonalshift.GetManagedResourceInput{ResourceIdentifier: aws.String("arn:aws:eks:us-west-2:000000000000:cluster/other")})
	var notFound *arctypes.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Errorf("GetManagedResource of an unregistered cluster: %v, want ResourceNotFoundException", err)
	}
	if n := s.Router().Calls("arc-zonal-shift", "GetManagedResource"); n != 4 {
		t.Errorf("the router counted %d GetManagedResource calls, want 4", n)
	}
}
