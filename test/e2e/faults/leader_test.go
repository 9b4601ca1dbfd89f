package faults

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// replicas starts n karp replicas sharing the test's Lease, replica i
// running as user <name>-<i> so the audit log tells their requests apart.
func replicas(t *testing.T, f *framework.Framework, name string, n int) ([]*framework.Karp, map[*framework.Karp]string) {
	t.Helper()
	ks := make([]*framework.Karp, 0, n)
	users := map[*framework.Karp]string{}
	for i := range n {
		user := fmt.Sprintf("%s-%d", name, i)
		k := framework.StartKarp(t, f, append([]string{"--kubeconfig", framework.KubeconfigAs(t, f, user)}, framework.FastDisruptionArgs...)...)
		ks = append(ks, k)
		users[k] = user
	}
	return ks, users
}

// replicasOnPool creates an on-demand NodePool named name, deleted when
// the test ends, and starts n replicas of the controller for it.
func replicasOnPool(t *testing.T, f *framework.Framework, name string, n int) ([]*framework.Karp, map[*framework.Karp]string) {
	t.Helper()
	framework.CreatePool(t, f.Client, name, onDemandPool(name))
	ks, users := replicas(t, f, name, n)
	t.Cleanup(func() { framework.DeletePool(f.Client, name) })
	return ks, users
}

// onDemandPool is a NodePool of on-demand nodes.
func onDemandPool(name string) *karpv1.NodePool {
	return test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).Obj()
}

// provision creates a Deployment of n one-CPU pods named name on the pool
// name, waits until they are all available and returns it.
func provision(t *testing.T, f *framework.Framework, name string, n int32) *appsv1.Deployment {
	t.Helper()
	deploy := framework.Deployment(name, name, name, n, "1")
	framework.Create(t, f.Client, deploy)
	waitAvailable(t, f, name, int(n))
	return deploy
}

// leader waits until exactly one replica leads and returns it.
func leader(t *testing.T, f *framework.Framework, ks ...*framework.Karp) *framework.Karp {
	t.Helper()
	var got *framework.Karp
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		k, err := framework.Leader(ctx, f.Client, ks...)
		if err != nil {
			return false, err.Error()
		}
		got = k
		return true, ""
	})
	return got
}

func other(ks []*framework.Karp, k *framework.Karp) *framework.Karp {
	for _, o := range ks {
		if o != k {
			return o
		}
	}
	return nil
}

func scale(t *testing.T, f *framework.Framework, d *appsv1.Deployment, replicas int32) {
	t.Helper()
	framework.Mutate(t, f.Client, d, func() { d.Spec.Replicas = ptr.To(replicas) })
}

func waitAvailable(t *testing.T, f *framework.Framework, namespace string, n int) {
	t.Helper()
	framework.Eventually(t, 4*time.Minute, func(ctx context.Context) (bool, string) {
		got := len(framework.AvailablePods(ctx, f.Client, namespace, nil))
		return got == n, fmt.Sprintf("%d of %d pods available", got, n)
	})
}

// A leader frozen (SIGSTOP) past its lease loses it to the other replica,
// which carries on provisioning. Resumed (SIGCONT) while pods are still
// being placed, the old leader steps down: it exits, and from the moment
// it resumed it writes nothing to the API server, so it never acts on a
// lease it no longer holds.
func TestPausedLeaderHandsOverAndStopsActing(t *testing.T) {
	const name = "faults-leader"
	f := framework.Current(t)
	ks, users := replicasOnPool(t, f, name, 2)

	deploy := provision(t, f, name, 2)
	old := leader(t, f, ks...)
	next := other(ks, old)
	t.Logf("leader pid %d (%s), standby pid %d (%s)", old.PID(), users[old], next.PID(), users[next])

	if err := old.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	scale(t, f, deploy, 6)
	if got := leader(t, f, ks...); got != next {
		t.Fatalf("after freezing the leader, pid %d leads, want the standby %d", got.PID(), next.PID())
	}
	// More pods while the old leader is frozen, so that on resuming its
	// (stale) view has work in it for a moment.
	scale(t, f, deploy, 10)
	resumed := time.Now()
	if err := old.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if !old.WaitExit(time.Minute) {
		t.Fatalf("the resumed old leader (pid %d) still runs a minute after losing its lease", old.PID())
	}
	waitAvailable(t, f, name, 10)
	if got := leader(t, f, ks...); got != next {
		t.Fatalf("pid %d leads after the handover, want %d", got.PID(), next.PID())
	}

	var writes []string
	for _, e := range framework.AuditEvents(t, f) {
		if e.User.Username == users[old] && e.Write() && !e.RequestReceived.Before(resumed) {
			writes = append(writes, e.String())
		}
	}
	if len(writes) > 0 {
		t.Errorf("the old leader wrote %d times after resuming without its lease:\n%s", len(writes), strings.Join(writes, "\n"))
	}
}

// Both replicas killed (SIGKILL) and started again: one of them leads
// again and provisioning goes on.
func TestBothReplicasKilledAndRestarted(t *testing.T) {
	const name = "faults-kill-both"
	f := framework.Current(t)
	ks, _ := replicasOnPool(t, f, name, 2)
	first := leader(t, f, ks...)
	firstPID := first.PID()

	for _, k := range ks {
		if err := k.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range ks {
		if !k.WaitExit(30 * time.Second) {
			t.Fatalf("pid %d survived SIGKILL", k.PID())
		}
		if _, err := k.Leading(t.Context()); err == nil {
			t.Errorf("a killed replica (pid %d) still answers whether it leads", k.PID())
		}
	}
	pids := map[int]bool{}
	for _, k := range ks {
		pids[k.PID()] = true
		k.Restart(t)
		if pids[k.PID()] {
			t.Fatalf("Restart kept pid %d", k.PID())
		}
	}
	// The killed leader never released the Lease: a replica leads again
	// once it expires.
	got := leader(t, f, ks...)
	t.Logf("leader before the kill pid %d, after pid %d", firstPID, got.PID())

	provision(t, f, name, 3)
}

// The leader killed (SIGKILL, so it releases nothing): the standby takes
// the Lease once it expires and provisions; the killed replica, started
// again, stands by.
func TestKilledLeaderHandsOver(t *testing.T) {
	const name = "faults-kill-leader"
	f := framework.Current(t)
	ks, _ := replicasOnPool(t, f, name, 2)
	old := leader(t, f, ks...)
	next := other(ks, old)

	if err := old.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !old.WaitExit(30 * time.Second) {
		t.Fatal("the leader survived SIGKILL")
	}
	if got := leader(t, f, ks...); got != next {
		t.Fatalf("pid %d leads after the leader's death, want the standby %d", got.PID(), next.PID())
	}
	provision(t, f, name, 3)

	old.Restart(t)
	framework.Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
		leading, err := old.Leading(ctx)
		return err == nil && !leading, fmt.Sprintf("restarted replica leading %v (%v)", leading, err)
	})
	if got := leader(t, f, ks...); got != next {
		t.Fatalf("pid %d leads after the old leader came back, want %d", got.PID(), next.PID())
	}
}

// A lone controller frozen past its lease, with no standby to take it,
// resumes leading: the fence that stopped its writes while the Lease was
// stale opens again with the next renewal, and it provisions.
func TestPausedLoneLeaderResumes(t *testing.T) {
	const name = "faults-lone-leader"
	f := framework.Current(t)
	ks, _ := replicasOnPool(t, f, name, 1)
	k := ks[0]
	leader(t, f, k)

	if err := k.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Past the 15s lease: the Lease is stale when it resumes.
	time.Sleep(20 * time.Second)
	deploy := framework.Deployment(name, name, name, 2, "1")
	framework.Create(t, f.Client, deploy)
	if err := k.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, f, name, 2)
	if k.Exited() {
		t.Fatalf("the lone controller exited after resuming:\n%s", tailLines(k.Log(), 20))
	}
	leader(t, f, k)
}
