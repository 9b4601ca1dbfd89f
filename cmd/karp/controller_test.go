package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/operator"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

func TestControllerRejectsBadFlags(t *testing.T) {
	for name, tc := range map[string]struct {
		args       []string
		wantStderr string
	}{
		"fake provider":              {[]string{"controller", "--cloud-provider=fake"}, "--cloud-provider"},
		"unknown log level":          {[]string{"controller", "--log-level=chatty"}, "--log-level"},
		"unknown flag":               {[]string{"controller", "--no-such-flag"}, "no-such-flag"},
		"aws without a cluster name": {[]string{"controller", "--cloud-provider=aws"}, "--cluster-name (CLUSTER_NAME) is required"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("CLUSTER_NAME", "")
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != 2 {
				t.Fatalf("exit code = %d, want 2 (stderr %q)", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

// TestControllerProcessLeadsAndServes builds the karp binary, runs
// `karp controller --kubeconfig` against a real API server, and checks it
// takes the Lease, becomes ready, serves metrics and exits cleanly on SIGTERM.
func TestControllerProcessLeadsAndServes(t *testing.T) {
	env := environment.New(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "karp")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building karp: %v\n%s", err, out)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(env.Config, kubeconfig); err != nil {
		t.Fatal(err)
	}
	healthPort, metricsPort := mustPort(t), mustPort(t)
	logs := &syncBuffer{}
	cmd := exec.Command(bin, "controller", "--kubeconfig", kubeconfig,
		fmt.Sprintf("--health-probe-port=%d", healthPort), fmt.Sprintf("--metrics-port=%d", metricsPort),
		"--leader-election-name=karp-process-test", "--log-level=debug")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited //nolint:errcheck // killed by the cleanup: the exit error says only that
		}
	})

	poll(t, logs, "/readyz 200", func() bool {
		code, _ := httpGet(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
		return code == http.StatusOK
	})
	poll(t, logs, "the lease to be held", func() bool {
		lease := &coordinationv1.Lease{}
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: "karp-process-test"}, lease)
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	})
	// The controllers start one by one once the lease is held; each
	// adds its controller-runtime series as it starts.
	poll(t, logs, "controller-runtime metrics on /metrics", func() bool {
		code, body := httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
		return code == http.StatusOK && strings.Contains(body, "controller_runtime_reconcile_total") && strings.Contains(body, "leader_election_master_status")
	})
	if !strings.Contains(logs.String(), `"message":"starting karp controller"`) {
		t.Errorf("no JSON start-up log line in:\n%s", logs.String())
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("karp controller exited with %v after SIGTERM; logs:\n%s", err, logs.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("karp controller did not exit after SIGTERM; logs:\n%s", logs.String())
	}
}

func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin"}
	kc.CurrentContext = "test"
	return clientcmd.WriteToFile(*kc, path)
}

func mustPort(t *testing.T) int {
	t.Helper()
	port, err := operator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url) //nolint:gosec,noctx // test-local URL
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func poll(t *testing.T, logs *syncBuffer, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; logs:\n%s", what, err, logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe to read while the child process writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
