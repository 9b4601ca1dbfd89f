package framework

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LeaseNamespace holds the controller's leader-election Lease unless
// --leader-election-namespace names another: karp's fallback outside a
// cluster (no pod namespace file).
const LeaseNamespace = "kube-system"

// leaderGauge is the controller-runtime metric that is 1 while the process
// leads the Lease its name label names, 0 otherwise.
const leaderGauge = "leader_election_master_status"

// Leading asks the controller, through its metrics, whether it believes it
// leads its Lease. A frozen (SIGSTOP) or exited controller answers nothing:
// that is an error, not a "no".
func (k *Karp) Leading(ctx context.Context) (bool, error) {
	if k.MetricsPort == 0 {
		return false, errors.New("karp runs without metrics (--metrics-port=0): cannot ask whether it leads")
	}
	if k.Exited() {
		return false, fmt.Errorf("karp pid %d has exited", k.PID())
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	url := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(k.MetricsPort)) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, fmt.Errorf("reading karp pid %d metrics: %w", k.PID(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("reading karp pid %d metrics: %s", k.PID(), resp.Status)
	}
	want := leaderGauge + `{name="` + k.LeaseName + `"} `
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if value, ok := strings.CutPrefix(sc.Text(), want); ok {
			return strings.TrimSpace(value) == "1", nil
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("reading karp pid %d metrics: %w", k.PID(), err)
	}
	// The gauge appears once the elector first reports; until then the
	// process is a candidate that does not lead.
	return false, nil
}

// Leader returns the replica that leads: the Lease is held and exactly one
// of the live, answering replicas reports leading it. Replicas that do
// not answer (frozen, exited) are passed over, since they cannot act.
// The error says what is wrong otherwise: nobody holds the Lease, no
// replica leads yet, or two replicas both believe they lead (one of them
// with a lease it lost, which must not last).
func Leader(ctx context.Context, cl client.Client, replicas ...*Karp) (*Karp, error) {
	if len(replicas) == 0 {
		return nil, errors.New("no replicas given")
	}
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: replicas[0].LeaseNamespace, Name: replicas[0].LeaseName}
	if err := cl.Get(ctx, key, lease); err != nil {
		return nil, fmt.Errorf("reading Lease %s: %w", key, err)
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	if holder == "" {
		return nil, fmt.Errorf("the Lease %s is not held", key)
	}
	var leaders []*Karp
	var silent []string
	for _, k := range replicas {
		if k.LeaseNamespace != key.Namespace || k.LeaseName != key.Name {
			return nil, fmt.Errorf("karp pid %d uses Lease %s/%s, not %s: not a replica of the same controller", k.PID(), k.LeaseNamespace, k.LeaseName, key)
		}
		if k.Exited() {
			continue
		}
		leading, err := k.Leading(ctx)
		if err != nil {
			silent = append(silent, err.Error())
			continue
		}
		if leading {
			leaders = append(leaders, k)
		}
	}
	switch len(leaders) {
	case 1:
		return leaders[0], nil
	case 0:
		return nil, fmt.Errorf("no answering replica leads (Lease held by %s; not answering: %v)", holder, silent)
	default:
		pids := make([]int, 0, len(leaders))
		for _, k := range leaders {
			pids = append(pids, k.PID())
		}
		return nil, fmt.Errorf("replicas %v all report leading Lease %s (held by %s)", pids, key, holder)
	}
}

// metricsPort picks a free loopback port below the kernel's ephemeral
// range, so no outgoing connection (of this or a parallel test package)
// can take it between now and the controller binding it.
func metricsPort() (int, error) {
	low, high := 20000, ephemeralLow()-1
	for range 50 {
		port := low + rand.IntN(high-low+1) //nolint:gosec // a port number, not a secret
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		_ = l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("no free port found between %d and %d", low, high)
}

// ephemeralLow is the bottom of the kernel's ephemeral port range (32768
// when it cannot be read).
func ephemeralLow() int {
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(raw))
	if len(fields) != 2 {
		return 32768
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low <= 20001 {
		return 32768
	}
	return low
}

// stringFlag returns the last value of --name in args ("--name=v" or
// "--name v"), as the flag package keeps the last one.
func stringFlag(args []string, name string) string {
	value := ""
	for i, a := range args {
		a = "-" + strings.TrimLeft(a, "-")
		switch {
		case strings.HasPrefix(a, "-"+name+"="):
			value = strings.TrimPrefix(a, "-"+name+"=")
		case a == "-"+name && i+1 < len(args):
			value = args[i+1]
		}
	}
	return value
}

// intFlag is stringFlag for an integer (0 when absent or malformed).
func intFlag(args []string, name string) int {
	n, _ := strconv.Atoi(stringFlag(args, name))
	return n
}

// leaseLost is what karp-controller prints when it exits because its
// leader-election Lease could not be renewed in time.
const leaseLost = "leader election lost"

// SuperviseLeaseLoss does for the controller what its Deployment does in a
// cluster, for a test whose faults may cost it its Lease (a restart of the
// API server or etcd that outlasts the renew deadline on a loaded
// machine): when the process exits because it lost its Lease, it is
// started again within a second. Any other exit fails the test: karp does
// not crash on a control plane fault. It returns how many times the
// controller was restarted so far. Supervision ends when the test does,
// before the controller is stopped.
func (k *Karp) SuperviseLeaseLoss(t testing.TB) func() int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	var restarts atomic.Int64
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if !k.Exited() {
				continue
			}
			if log := k.Log(); !strings.Contains(tailString(log, 2000), leaseLost) {
				t.Errorf("karp exited, not because it lost its Lease:\n%s", tailString(log, 4000))
				return
			}
			t.Logf("karp lost its Lease and exited; starting it again, as its Deployment would")
			if err := k.start(k.args); err != nil {
				t.Errorf("restarting karp after it lost its Lease: %v", err)
				return
			}
			restarts.Add(1)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() int { return int(restarts.Load()) }
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
