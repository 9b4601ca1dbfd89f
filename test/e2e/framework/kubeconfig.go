package framework

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// KubeconfigVia writes a copy of the cluster's admin kubeconfig whose
// server is https://addr (a faultproxy in front of the kube-apiserver) and
// returns its path, removed when the test ends. The client still checks
// the API server's certificate, which is valid for 127.0.0.1, so addr must
// be a 127.0.0.1 address.
func KubeconfigVia(t testing.TB, f *Framework, addr string) string {
	t.Helper()
	return ServerVia(t, f.Cluster.Kubeconfig, addr)
}

// KubeconfigAs writes a kubeconfig for a new user with the admin's rights
// (localcluster's KubeconfigFor) and returns its path: give each replica
// its own user to tell their requests apart in the audit log.
func KubeconfigAs(t testing.TB, f *Framework, user string) string {
	t.Helper()
	path, err := f.Cluster.KubeconfigFor(user)
	if err != nil {
		t.Fatalf("writing a kubeconfig for %s: %v", user, err)
	}
	return path
}

// ServerVia writes a copy of the kubeconfig at path whose server is
// https://addr and returns the copy's path, removed when the test ends.
func ServerVia(t testing.TB, path, addr string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatalf("loading kubeconfig %s: %v", path, err)
	}
	for _, cluster := range cfg.Clusters {
		cluster.Server = "https://" + addr
	}
	out := filepath.Join(t.TempDir(), filepath.Base(path)+"-via-"+sanitize(addr))
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatalf("writing kubeconfig via %s: %v", addr, err)
	}
	return out
}

// sanitize makes addr usable in a file name.
func sanitize(addr string) string {
	out := []rune(addr)
	for i, r := range out {
		if r == ':' || r == '/' {
			out[i] = '-'
		}
	}
	return string(out)
}
