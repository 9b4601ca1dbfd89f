package environment

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
)

// StartLocalCluster starts the full local control plane (etcd,
// kube-apiserver, kube-scheduler, kube-controller-manager, kwok) in a fresh
// directory for one test, building the binaries first if needed, and stops
// it when the test ends. It returns the cluster and a client with karp's
// scheme.
func StartLocalCluster(t testing.TB) (*localcluster.Cluster, client.Client) {
	t.Helper()
	binDir, err := EnsureBinaries()
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
	cl, err := client.New(cluster.Config, client.Options{Scheme: NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return cluster, cl
}
