package faults

import (
	"net"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/faultproxy"
)

// A client whose kubeconfig points at the proxy reaches the API server
// over TLS (the certificate covers the proxy's address), sees the injected
// latency, fails while the proxy drops, and succeeds again after.
func TestProxyFaultsReachAnAPIClient(t *testing.T) {
	f := framework.Current(t)
	ctx := t.Context()
	p, err := faultproxy.Start(net.JoinHostPort("127.0.0.1", strconv.Itoa(f.Cluster.Ports.APIServer)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cfg, err := clientcmd.BuildConfigFromFlags("", framework.KubeconfigVia(t, f, p.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://"+p.Addr() {
		t.Fatalf("kubeconfig server = %s, want the proxy https://%s", cfg.Host, p.Addr())
	}
	cfg.Timeout = 20 * time.Second
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := client.ObjectKey{Name: "default"}
	if err := cl.Get(ctx, ns, &corev1.Namespace{}); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}

	const latency = time.Second
	p.SetLatency(latency)
	began := time.Now()
	if err := cl.Get(ctx, ns, &corev1.Namespace{}); err != nil {
		t.Fatalf("through the slowed proxy: %v", err)
	}
	// Only the lower bound: load makes a request slower, never faster.
	if took := time.Since(began); took < latency {
		t.Errorf("a request took %v through a proxy adding %v", took, latency)
	}
	p.SetLatency(0)

	p.Drop(time.Hour)
	err = cl.Get(ctx, ns, &corev1.Namespace{})
	if err == nil {
		t.Fatal("a request through the dropping proxy succeeded")
	}
	t.Logf("during the drop: %v", err)
	p.Drop(0)
	if err := cl.Get(ctx, ns, &corev1.Namespace{}); err != nil {
		t.Fatalf("after the drop: %v", err)
	}
	// The API server itself was never affected.
	if err := f.Client.Get(ctx, ns, &corev1.Namespace{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-f.Cluster.Died():
		t.Fatalf("a component died: %v", err)
	default:
	}
}
