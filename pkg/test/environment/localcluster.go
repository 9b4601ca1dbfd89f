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
// scheme. Each option edits the cluster's Options before it starts.
func StartLocalCluster(t testing.TB, options ...func(*localcluster.Options)) (*localcluster.Cluster, client.Client) {
	t.Helper()
	binDir, err := EnsureBinaries()
	if err != nil {
		t.Fatal(err)
	}
	opts := localcluster.Options{Dir: t.TempDir(), BinDir: binDir}
	for _, o := range options {
		o(&opts)
	}
	cluster, err := localcluster.Start(t.Context(), opts)
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
