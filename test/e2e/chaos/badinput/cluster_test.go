package badinput_test

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
	"github.com/karp-autoscaler/karp/test/e2e/chaos/badinput"
)

// TestEveryCaseOnALocalCluster applies every case, as the chaos suite
// does, to a full local cluster (kube-scheduler, kwok) with karp running
// in process: the scheduler marks the bad pods unschedulable, and the pods
// that are bad only in an annotation run on a node karp launches in the
// workload pool, where karp's disruption loop tells them their annotation
// is ignored.
func TestEveryCaseOnALocalCluster(t *testing.T) {
	binDir, err := environment.EnsureBinaries()
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := localcluster.Start(t.Context(), localcluster.Options{Dir: t.TempDir(), BinDir: binDir})
	if err != nil {
		t.Fatalf("starting local cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Errorf("stopping local cluster: %v", err)
		}
	})
	cl, err := client.New(cluster.Config, client.Options{Scheme: environment.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	startKarp(t, cluster.Config)
	workloadPool(t, cl, "workload")
	ns := namespace(t, cl, "badinput")

	results := badinput.Run(t.Context(), cl, ns)
	verifyAndCleanUp(t, cl, ns, results, 3*time.Minute)
}
