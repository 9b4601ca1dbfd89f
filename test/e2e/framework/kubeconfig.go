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
	cfg, err := clientcmd.LoadFromFile(f.Cluster.Kubeconfig)
	if err != nil {
		t.Fatalf("loading the admin kubeconfig: %v", err)
	}
	for _, cluster := range cfg.Clusters {
		cluster.Server = "https://" + addr
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-via-"+filepath.Base(sanitize(addr)))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("writing kubeconfig via %s: %v", addr, err)
	}
	return path
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
