package instance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// A batch's window is timed from its first request until it runs: with
// no second request, the idle wait.
func TestBatchWindowIsTimed(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	name := "test_" + t.Name()
	b := newBatcher(name, clk, 3*time.Second, 10*time.Second, 100, func(_ context.Context, items []int) []batchResult[int] {
		return make([]batchResult[int], len(items))
	})
	done := make(chan error, 1)
	go func() {
		_, err := b.Add(t.Context(), "k", 1)
		done <- err
	}()
	// Both timers (idle and max) armed, then the idle one fires.
	for clk.Waiters() < 2 {
		time.Sleep(time.Millisecond)
	}
	clk.Step(3 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var m dto.Metric
	if err := BatchTime.WithLabelValues(name).(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetHistogram(); got.GetSampleCount() != 1 || got.GetSampleSum() != 3 {
		t.Errorf("window %v s over %d batches, want 3 s once", got.GetSampleSum(), got.GetSampleCount())
	}
}

// failingTerminations is the fake EC2 whose TerminateInstances fails and
// whose instances say their zone ID.
type failingTerminations struct{ *fake.EC2 }

func (f failingTerminations) TerminateInstances(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	return nil, errors.New("UnauthorizedOperation")
}

func (f failingTerminations) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	out, err := f.EC2.DescribeInstances(ctx, in, opts...)
	if out != nil {
		for _, r := range out.Reservations {
			for i := range r.Instances {
				if p := r.Instances[i].Placement; p != nil {
					p.AvailabilityZoneId = aws.String("id-" + aws.ToString(p.AvailabilityZone))
				}
			}
		}
	}
	return out, err
}

// A failed TerminateInstances is counted by the instance's zone and zone
// ID; a successful one is not.
func TestFailedTerminationsAreCounted(t *testing.T) {
	ctx := t.Context()
	e := newFakeEC2(t)
	p := NewProvider(e, clock.RealClock{}, "test-cluster", nil)
	inst, err := p.Create(ctx, request("a", "on-demand"))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(TerminationFailuresTotal); err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(TerminationFailuresTotal.WithLabelValues(inst.Zone, "id-"+inst.Zone))

	failing := NewProvider(failingTerminations{e}, clock.RealClock{}, "test-cluster", nil)
	if err := failing.Delete(ctx, inst.ID); err == nil {
		t.Fatal("Delete succeeded with TerminateInstances failing")
	}
	if got := testutil.ToFloat64(TerminationFailuresTotal.WithLabelValues(inst.Zone, "id-"+inst.Zone)) - before; got != 1 {
		t.Errorf("%v failures counted for zone %s, want 1", got, inst.Zone)
	}
	if err := p.Delete(ctx, inst.ID); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(TerminationFailuresTotal.WithLabelValues(inst.Zone, "id-"+inst.Zone)) - before; got != 1 {
		t.Errorf("%v failures after a successful Delete, want still 1", got)
	}
	if n, err := testutil.GatherAndCount(reg, "karpenter_cloudprovider_instance_termination_failures_total"); err != nil || n == 0 {
		t.Errorf("scraped %d series (%v), want the zone's", n, err)
	}
}
