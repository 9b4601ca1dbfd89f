package faults

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/faultproxy"
)

// The controller talks to the API server through the fault proxy: it
// provisions with slowed responses, rides out a drop shorter than its
// renew deadline without losing the lead, and provisions again after.
func TestControllerThroughAFaultyNetwork(t *testing.T) {
	const name = "faults-network"
	f := framework.Current(t)
	p, err := faultproxy.Start(net.JoinHostPort("127.0.0.1", strconv.Itoa(f.Cluster.Ports.APIServer)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	framework.CreatePool(t, f.Client, name, onDemandPool(name))
	k := framework.StartKarp(t, f, "--kubeconfig", framework.KubeconfigVia(t, f, p.Addr()))
	t.Cleanup(func() { p.Drop(0); p.SetLatency(0); framework.DeletePool(f.Client, name) })

	deploy := framework.Deployment(name, name, name, 2, "1")
	framework.Create(t, f.Client, deploy)
	p.SetLatency(300 * time.Millisecond)
	waitAvailable(t, f, name, 2)
	p.SetLatency(0)

	leader(t, f, k)
	p.Drop(3 * time.Second)
	time.Sleep(3 * time.Second)
	scale(t, f, deploy, 5)
	waitAvailable(t, f, name, 5)
	if k.Exited() {
		t.Fatalf("karp exited after a 3s drop, shorter than its 10s renew deadline:\n%s", tailLines(k.Log(), 20))
	}
	if accepted, refused := p.Stats(); accepted < 2 || refused == 0 {
		t.Errorf("proxy stats %d accepted, %d refused: want the controller to have reconnected after refused attempts", accepted, refused)
	}
}

// The controller rides out restarts of etcd and the API server: it keeps
// leading, or exits because it lost its Lease (never crashing otherwise)
// and leads again when started; either way it provisions afterwards.
func TestControllerRidesOutControlPlaneRestarts(t *testing.T) {
	const name = "faults-control-plane"
	f := framework.Current(t)
	framework.CreatePool(t, f.Client, name, onDemandPool(name))
	k := framework.StartKarp(t, f)
	t.Cleanup(func() { framework.DeletePool(f.Client, name) })
	restarts := k.SuperviseLeaseLoss(t)
	deploy := provision(t, f, name, 2)

	for _, component := range []string{localcluster.Etcd, localcluster.APIServer} {
		if err := f.Cluster.Restart(t.Context(), component); err != nil {
			t.Fatal(err)
		}
	}
	restarted := time.Now()
	// The elector gives up only after its renew deadline, so wait for a
	// renewal after the restarts (it still leads, or leads again once the
	// supervisor started it after its exit).
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		lease := &coordinationv1.Lease{}
		if err := f.Client.Get(ctx, client.ObjectKey{Namespace: k.LeaseNamespace, Name: k.LeaseName}, lease); err != nil {
			return false, err.Error()
		}
		renewed := lease.Spec.RenewTime
		leading, err := k.Leading(ctx)
		return err == nil && leading && renewed != nil && renewed.After(restarted),
			fmt.Sprintf("leading %v (%v), lease renewed %v, control plane restarted %v", leading, err, renewed, restarted)
	})
	scale(t, f, deploy, 5)
	waitAvailable(t, f, name, 5)
	leader(t, f, k)
	t.Logf("karp restarted after losing its Lease: %d times", restarts())
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
