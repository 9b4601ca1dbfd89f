package aws_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// drifts runs IsDrifted over the NodeClaims with ten workers, as the
// core's drift controller does, and returns each reason and error.
func drifts(ctx context.Context, p *aws.CloudProvider, claims []*karpv1.NodeClaim) ([]cloudprovider.DriftReason, []error) {
	reasons, errs := make([]cloudprovider.DriftReason, len(claims)), make([]error, len(claims))
	next := make(chan int)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for i := range next {
				reasons[i], errs[i] = p.IsDrifted(ctx, claims[i])
			}
		})
	}
	for i := range claims {
		next <- i
	}
	close(next)
	wg.Wait()
	return reasons, errs
}

// TestADriftPassListsInstancesOnce: checking many NodeClaims costs one
// DescribeInstances listing per DriftInstancesTTL, not a call each.
func TestADriftPassListsInstancesOnce(t *testing.T) {
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	const n = 40
	var claims []*karpv1.NodeClaim
	for range n {
		claims = append(claims, launch(t, w, newNodeClaim("pass", nodeClass.Name)))
	}
	// A provider whose drift cache runs on a clock the test moves.
	clk := clocktesting.NewFakeClock(clock.RealClock{}.Now())
	drifter := aws.New(env.Client, clk, clusterName, w.Types, instance.NewProvider(w.EC2, clock.RealClock{}, clusterName, w.Unavailable), nil, w.Unavailable)
	pass := func(t *testing.T, claims []*karpv1.NodeClaim, want cloudprovider.DriftReason) int {
		t.Helper()
		before := w.EC2.Calls("DescribeInstances")
		reasons, errs := drifts(t.Context(), drifter, claims)
		for i := range claims {
			if errs[i] != nil || reasons[i] != want {
				t.Fatalf("IsDrifted(%s) = %q, %v; want %q", claims[i].Name, reasons[i], errs[i], want)
			}
		}
		return w.EC2.Calls("DescribeInstances") - before
	}
	if calls := pass(t, claims, ""); calls != 1 {
		t.Errorf("first pass over %d NodeClaims: %d DescribeInstances calls, want 1", n, calls)
	}
	if calls := pass(t, claims, ""); calls != 0 {
		t.Errorf("second pass within %s: %d DescribeInstances calls, want 0", aws.DriftInstancesTTL, calls)
	}
	// A node launched after the listing is described on its own.
	claims = append(claims, launch(t, w, newNodeClaim("pass", nodeClass.Name)))
	if calls := pass(t, claims, ""); calls != 1 {
		t.Errorf("pass with a new node: %d DescribeInstances calls, want 1", calls)
	}
	// A status change is judged against the same listing.
	reconciled(t, nodeClass.Name, moveSubnets)
	if calls := pass(t, claims, aws.SubnetDrift); calls != 0 {
		t.Errorf("pass after a status change: %d DescribeInstances calls, want 0", calls)
	}
	// Once the listing expires, the next pass lists again, once.
	clk.Step(aws.DriftInstancesTTL)
	if calls := pass(t, claims, aws.SubnetDrift); calls != 1 {
		t.Errorf("pass after %s: %d DescribeInstances calls, want 1", aws.DriftInstancesTTL, calls)
	}
	// A throttled listing is an error for the check that made it, never a
	// verdict; the next pass lists again.
	clk.Step(aws.DriftInstancesTTL)
	w.EC2.FailNext("DescribeInstances", 1, fake.Throttling("DescribeInstances"))
	if _, err := drifter.IsDrifted(t.Context(), claims[0]); err == nil || !errors.As(err, new(interface{ ErrorCode() string })) {
		t.Errorf("IsDrifted with DescribeInstances throttled = %v, want the throttling error", err)
	}
	if calls := pass(t, claims, aws.SubnetDrift); calls != 1 {
		t.Errorf("pass after a throttled listing: %d DescribeInstances calls, want 1", calls)
	}
}
