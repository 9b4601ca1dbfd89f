package localcluster_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// startCluster starts a cluster in a fresh directory and stops it with the
// test.
func startCluster(t *testing.T) *localcluster.Cluster {
	t.Helper()
	c, _ := environment.StartLocalCluster(t)
	return c
}

func TestClusterStartsServesCRDsAndStopsClean(t *testing.T) {
	c, _ := environment.StartLocalCluster(t, func(o *localcluster.Options) { o.GOMAXPROCS = 1 })
	ctx := t.Context()

	state, err := localcluster.ReadState(c.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !state.Ready || len(state.Components) != 5 {
		t.Fatalf("state = ready %v with %d components, want ready with 5", state.Ready, len(state.Components))
	}
	for _, r := range state.Components {
		if !r.Alive() {
			t.Errorf("%s (pid %d) is not running", r.Name, r.PID)
		}
		// Options.GOMAXPROCS reaches every component.
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", r.PID))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(strings.Split(string(environ), "\x00"), "GOMAXPROCS=1") {
			t.Errorf("%s (pid %d) runs without GOMAXPROCS=1", r.Name, r.PID)
		}
	}
	for _, port := range c.Ports.All() {
		if !localcluster.PortInUse(port) {
			t.Errorf("nothing listens on 127.0.0.1:%d", port)
		}
	}

	// The karp CRDs are Established: the API serves NodePools.
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pools := &unstructured.UnstructuredList{}
	pools.SetGroupVersionKind(schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePoolList"})
	if err := cl.List(ctx, pools); err != nil {
		t.Fatalf("listing NodePools: %v", err)
	}

	if err := c.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	for _, r := range state.Components {
		if r.Alive() {
			t.Errorf("%s (pid %d) survived Stop", r.Name, r.PID)
		}
	}
	for _, port := range c.Ports.All() {
		if localcluster.PortInUse(port) {
			t.Errorf("127.0.0.1:%d still in use after Stop", port)
		}
	}
	if _, err := os.Stat(c.Dir + "/state.json"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file still present after Stop: %v", err)
	}
}

func TestClusterReportsDeadComponentWithLogTail(t *testing.T) {
	c := startCluster(t)
	var kwokPID int
	for _, r := range c.State().Components {
		if r.Name == localcluster.KWOK {
			kwokPID = r.PID
		}
	}
	if kwokPID == 0 {
		t.Fatal("kwok not recorded in state")
	}
	if err := syscall.Kill(kwokPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.Died():
		var exit *localcluster.ComponentExitError
		if !errors.As(err, &exit) {
			t.Fatalf("Died() delivered %T %v, want *ComponentExitError", err, err)
		}
		if exit.Component != localcluster.KWOK {
			t.Errorf("component = %q, want kwok", exit.Component)
		}
		if !strings.Contains(err.Error(), "kwok.log") || strings.TrimSpace(exit.LogTail) == "" {
			t.Errorf("error does not carry the kwok log tail: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no report of the killed kwok within 30s")
	}
}
