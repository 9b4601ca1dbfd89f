package kwok

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// awaitTimer waits until the launch goroutine sleeps on the fake clock, so
// that stepping the clock wakes it.
func awaitTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) { return clk.HasWaiters(), nil })
	if err != nil {
		t.Fatalf("the launch never waited on the clock: %v", err)
	}
}

// expectStillWaiting fails the test unless the launch goroutine still
// waits on the clock. FakeClock.Step fires the timers it passes before it
// returns, so a waiter left after a step is a launch whose delay has not
// run out: the sync point that the Node cannot appear yet, where checking
// only that it has not appeared would race a launch that woke too early.
func expectStillWaiting(t *testing.T, clk *clocktesting.FakeClock, what string) {
	t.Helper()
	if !clk.HasWaiters() {
		t.Fatalf("%s: the launch no longer waits on the clock", what)
	}
}

func awaitNode(t *testing.T, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) {
			_, err := getNode(t, name)
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
	if err != nil {
		t.Fatalf("Node %s never appeared: %v", name, err)
	}
}

func TestRegistrationDelay(t *testing.T) {
	tests := map[string]struct {
		providerDelay  time.Duration
		nodeClassDelay *time.Duration
		wantDelay      time.Duration
	}{
		"from the KWOKNodeClass":          {nodeClassDelay: ptrTo(30 * time.Second), wantDelay: 30 * time.Second},
		"provider default":                {providerDelay: time.Minute, wantDelay: time.Minute},
		"KWOKNodeClass overrides to zero": {providerDelay: time.Minute, nodeClassDelay: ptrTo(time.Duration(0))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(stamp)
			c := newProvider(t, WithClock(clk), WithRegistrationDelay(tc.providerDelay))
			nodeClass := readyNodeClass(t, func(w *test.KWOKNodeClassWrapper) {
				if tc.nodeClassDelay != nil {
					w.NodeRegistrationDelay(*tc.nodeClassDelay)
				}
			})
			nc := newNodeClaim("delayed", nodeClass.Name)
			created, err := c.Create(t.Context(), nc)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantDelay == 0 {
				if _, err := getNode(t, "delayed"); err != nil {
					t.Fatalf("without a delay the Node must exist when Create returns: %v", err)
				}
				return
			}
			if _, err := getNode(t, "delayed"); !apierrors.IsNotFound(err) {
				t.Fatalf("the Node exists before its registration delay (get: %v)", err)
			}
			// The pending instance is visible and a retry does not launch again.
			if got, err := c.Get(t.Context(), created.Status.ProviderID); err != nil || got.Status.ProviderID != created.Status.ProviderID {
				t.Errorf("Get of the pending instance: %v", err)
			}
			if countListed(t, c, created.Status.ProviderID) != 1 {
				t.Error("List misses the pending instance")
			}
			if again, err := c.Create(t.Context(), nc.DeepCopy()); err != nil || again.Status.ProviderID != created.Status.ProviderID {
				t.Errorf("retried Create returned %v", err)
			}
			awaitTimer(t, clk)
			clk.Step(tc.wantDelay - time.Second)
			expectStillWaiting(t, clk, "a second before the delay")
			if _, err := getNode(t, "delayed"); !apierrors.IsNotFound(err) {
				t.Fatalf("the Node appeared a second early (get: %v)", err)
			}
			clk.Step(time.Second)
			awaitNode(t, "delayed")
			if got, err := c.Get(t.Context(), created.Status.ProviderID); err != nil || got.Labels[corev1.LabelInstanceTypeStable] != created.Labels[corev1.LabelInstanceTypeStable] {
				t.Errorf("Get after registration: %v", err)
			}
		})
	}
}

func TestDeleteCancelsAPendingLaunch(t *testing.T) {
	clk := clocktesting.NewFakeClock(stamp)
	c := newProvider(t, WithClock(clk))
	nodeClass := readyNodeClass(t, func(w *test.KWOKNodeClassWrapper) { w.NodeRegistrationDelay(time.Minute) })
	created, err := c.Create(t.Context(), newNodeClaim("cancelled", nodeClass.Name))
	if err != nil {
		t.Fatal(err)
	}
	awaitTimer(t, clk)
	if err := c.Delete(t.Context(), created); err != nil {
		t.Fatalf("Delete of a pending launch: %v", err)
	}
	if err := c.Delete(t.Context(), created); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second Delete returned %v, want NotFound", err)
	}
	if _, err := c.Get(t.Context(), created.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get returned %v, want NotFound", err)
	}
	clk.Step(time.Minute)
	c.Close() // waits for the launch goroutine to return
	if _, err := getNode(t, "cancelled"); !apierrors.IsNotFound(err) {
		t.Errorf("a cancelled launch created its Node (get: %v)", err)
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestDelayedLaunchRetriesFailedCreates(t *testing.T) {
	clk := clocktesting.NewFakeClock(stamp)
	var attempts atomic.Int32
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	flaky := interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Node); ok && attempts.Add(1) <= 2 {
				return apierrors.NewServiceUnavailable("api server overloaded")
			}
			return cl.Create(ctx, obj, opts...)
		},
	})
	c, err := New(flaky, WithInstanceTypes(mustEmbeddedTypes(t)), WithClock(clk), WithRegistrationDelay(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); deleteAllNodes(t) })
	nodeClass := readyNodeClass(t, nil)
	if _, err := c.Create(t.Context(), newNodeClaim("flaky", nodeClass.Name)); err != nil {
		t.Fatal(err)
	}
	// Delay, then two failures each followed by a doubling backoff.
	for _, step := range []time.Duration{10 * time.Second, 200 * time.Millisecond, 400 * time.Millisecond} {
		awaitTimer(t, clk)
		clk.Step(step)
	}
	awaitNode(t, "flaky")
	if got := attempts.Load(); got != 3 {
		t.Errorf("%d create attempts, want 3", got)
	}
}
