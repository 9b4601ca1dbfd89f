package operator_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/operator"
	"github.com/karp-autoscaler/karp/pkg/operator/fence"
	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// fastLease makes takeover quick enough for a test.
var fastLease = operator.LeaderElectionTimings{LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 250 * time.Millisecond}

type running struct {
	op         *operator.Operator
	healthPort int
	cancel     context.CancelFunc
	done       chan error
}

// start builds and starts an operator against env with free ports.
func start(t *testing.T, env *environment.Environment, extraArgs ...string) *running {
	t.Helper()
	r := build(t, env, freePort(t), freePort(t), extraArgs...)
	r.run(t.Context())
	return r
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := operator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// build builds an operator against env without starting it.
func build(t *testing.T, env *environment.Environment, healthPort, metricsPort int, extraArgs ...string) *running {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	args := append([]string{
		fmt.Sprintf("--health-probe-port=%d", healthPort),
		fmt.Sprintf("--metrics-port=%d", metricsPort),
		"--leader-election-name=karp-test",
	}, extraArgs...)
	opts, err := options.Parse(fs, args)
	if err != nil {
		t.Fatal(err)
	}
	op, err := operator.New(t.Context(), env.Config, opts, operator.WithLeaderElectionTimings(fastLease))
	if err != nil {
		t.Fatal(err)
	}
	r := &running{op: op, healthPort: healthPort, done: make(chan error, 1)}
	t.Cleanup(r.stop)
	return r
}

// run starts the manager in the background.
func (r *running) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	go func() { r.done <- r.op.Start(ctx) }()
}

func (r *running) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done //nolint:errcheck // cancelled on purpose: the run ends with the context's error
	r.cancel = nil
}

func (r *running) elected() bool {
	select {
	case <-r.op.Elected():
		return true
	default:
		return false
	}
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url) //nolint:gosec,noctx // test-local URL
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// waitReady polls /readyz until it answers 200.
func waitReady(t *testing.T, r *running) {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", r.healthPort)
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		code, _, err := get(url)
		return err == nil && code == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("/readyz never became ready: %v", err)
	}
}

func waitElected(t *testing.T, r *running) {
	t.Helper()
	select {
	case <-r.op.Elected():
	case <-time.After(time.Minute):
		t.Fatal("not elected within a minute")
	}
}

func TestOneOfTwoReplicasLeadsAndTheOtherTakesOver(t *testing.T) {
	env := environment.New(t)
	first := start(t, env)
	waitElected(t, first)
	second := start(t, env)
	waitReady(t, second)

	// The standby is healthy and ready (its cache is warm) but not leading.
	lease := &coordinationv1.Lease{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: "kube-system", Name: "karp-test"}, lease); err != nil {
		t.Fatalf("getting the lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatalf("lease has no holder: %+v", lease.Spec)
	}
	holder := *lease.Spec.HolderIdentity
	// Sync points: the leader renews the lease every retry period, the
	// period at which the standby tries to acquire it. Over three renewals
	// the lease stays with the leader and the standby never leads.
	key := client.ObjectKey{Namespace: "kube-system", Name: "karp-test"}
	lastRenew, renewals := lease.Spec.RenewTime, 0
	err := wait.PollUntilContextTimeout(t.Context(), fastLease.RetryPeriod/5, time.Minute, true, func(ctx context.Context) (bool, error) {
		if second.elected() {
			return false, errors.New("both replicas lead")
		}
		now := &coordinationv1.Lease{}
		if err := env.Client.Get(ctx, key, now); err != nil {
			return false, nil
		}
		if now.Spec.HolderIdentity == nil || *now.Spec.HolderIdentity != holder {
			return false, fmt.Errorf("lease holder %v while the leader %s runs", now.Spec.HolderIdentity, holder)
		}
		if now.Spec.RenewTime != nil && (lastRenew == nil || !now.Spec.RenewTime.Equal(lastRenew)) {
			lastRenew, renewals = now.Spec.RenewTime, renewals+1
		}
		return renewals >= 3, nil
	})
	if err != nil {
		t.Fatalf("while the leader renewed its lease (%d renewals seen): %v", renewals, err)
	}

	// The leader stops (and releases the lease): the standby takes over.
	first.stop()
	waitElected(t, second)
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: "kube-system", Name: "karp-test"}, lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == holder {
		t.Errorf("lease holder = %v, want the second replica (not %s)", lease.Spec.HolderIdentity, holder)
	}
}

func TestProbesAnswer(t *testing.T) {
	env := environment.New(t)
	r := start(t, env, "--disable-leader-election")
	waitReady(t, r)
	code, body, err := get(fmt.Sprintf("http://127.0.0.1:%d/readyz?verbose", r.healthPort))
	if err != nil || code != http.StatusOK {
		t.Fatalf("/readyz = %d %v", code, err)
	}
	for _, check := range []string{"cache-sync", "crds"} {
		if !strings.Contains(body, check) {
			t.Errorf("/readyz?verbose does not list the %s check:\n%s", check, body)
		}
	}
	if code, _, err := get(fmt.Sprintf("http://127.0.0.1:%d/healthz", r.healthPort)); err != nil || code != http.StatusOK {
		t.Errorf("/healthz = %d %v", code, err)
	}
}

// The standby's clients write nothing (its writes are refused before they
// are sent) until it leads; the leader's go through. This is what keeps a
// replica that lost its Lease unnoticed (frozen, partitioned) from acting
// next to the new leader: see pkg/operator/fence.
func TestOnlyTheLeaderWrites(t *testing.T) {
	env := environment.New(t)
	first := start(t, env)
	waitElected(t, first)
	second := start(t, env)
	waitReady(t, second)

	ctx := t.Context()
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	}
	err := second.op.KubeClient.Create(ctx, cm("from-the-standby"))
	if !errors.Is(err, fence.ErrLeaseLapsed) {
		t.Fatalf("the standby's create = %v, want it refused with ErrLeaseLapsed", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "from-the-standby"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the standby's ConfigMap: %v, want NotFound", err)
	}
	if err := first.op.KubeClient.Create(ctx, cm("from-the-leader")); err != nil {
		t.Fatalf("the leader's create: %v", err)
	}

	// The same for the cloud: the standby launches and terminates nothing.
	standbyCloud, leaderCloud := fake.New(), fake.New()
	nodeClaim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "nc"}}
	if _, err := second.op.Deps(standbyCloud).CloudProvider.Create(ctx, nodeClaim); !errors.Is(err, fence.ErrLeaseLapsed) {
		t.Errorf("the standby's launch = %v, want it refused with ErrLeaseLapsed", err)
	}
	if err := second.op.Deps(standbyCloud).CloudProvider.Delete(ctx, nodeClaim); !errors.Is(err, fence.ErrLeaseLapsed) {
		t.Errorf("the standby's termination = %v, want it refused with ErrLeaseLapsed", err)
	}
	if n, m := len(standbyCloud.CreateCalls()), len(standbyCloud.DeleteCalls()); n+m != 0 {
		t.Errorf("the standby's cloud saw %d launches and %d terminations, want none", n, m)
	}
	_, _ = first.op.Deps(leaderCloud).CloudProvider.Create(ctx, nodeClaim)
	if n := len(leaderCloud.CreateCalls()); n != 1 {
		t.Errorf("the leader's cloud saw %d launches, want 1", n)
	}

	// The leader stops and releases the Lease: from then on it writes
	// nothing, though the standby may take over at once.
	first.stop()
	if err := first.op.KubeClient.Create(ctx, cm("after-the-release")); !errors.Is(err, fence.ErrLeaseLapsed) {
		t.Fatalf("the stopped leader's create = %v, want it refused with ErrLeaseLapsed", err)
	}
	waitElected(t, second)
	if err := second.op.KubeClient.Create(ctx, cm("from-the-new-leader")); err != nil {
		t.Fatalf("the new leader's create: %v", err)
	}
}
