package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// Framework is the running cluster of one test package.
type Framework struct {
	Cluster *localcluster.Cluster
	// Config is the admin rest.Config.
	Config *rest.Config
	// Client knows the built-in types, karp v1 and kwok v1alpha1.
	Client client.Client
	// BinDir holds the control plane binaries, kubectl included.
	BinDir string
}

var current *Framework

// Main starts the local cluster, runs the package's tests and stops the
// cluster, then exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// Run is Main without the exit, for a TestMain with its own set-up and
// clean-up around it; it returns the exit status.
func Run(m *testing.M) int {
	began := time.Now()
	f, dir, err := start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: starting the local cluster: %v\n", err)
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
		return 1
	}
	current = f
	code := m.Run()
	select {
	case err := <-f.Cluster.Died():
		fmt.Fprintf(os.Stderr, "e2e: a control plane component died during the run: %v\n", err)
		code = 1
	default:
	}
	if err := f.Cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: stopping the local cluster: %v\n", err)
		code = 1
	}
	recordPackage(began)
	if code == 0 && os.Getenv("KARP_E2E_KEEP_CLUSTER") == "" {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "e2e: cluster logs kept in %s\n", dir)
	}
	return code
}

func start() (*Framework, string, error) {
	binDir, err := environment.EnsureBinaries()
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "karp-e2e-")
	if err != nil {
		return nil, "", err
	}
	procs, err := controlPlaneGOMAXPROCS()
	if err != nil {
		return nil, dir, err
	}
	cluster, err := localcluster.Start(context.Background(), localcluster.Options{
		Dir: dir, BinDir: binDir, Timeout: 3 * time.Minute, GOMAXPROCS: procs,
	})
	if err != nil {
		return nil, dir, err
	}
	cl, err := client.New(cluster.Config, client.Options{Scheme: environment.NewScheme()})
	if err != nil {
		return nil, dir, errors.Join(fmt.Errorf("building client: %w", err), cluster.Stop())
	}
	return &Framework{Cluster: cluster, Config: cluster.Config, Client: cl, BinDir: binDir}, dir, nil
}

// ControlPlaneGOMAXPROCSEnv names the GOMAXPROCS the package's control
// plane components run with (localcluster.Options.GOMAXPROCS); unset,
// they have the machine's processors. `make e2e`, which runs four packages
// at once on a 2-core machine, sets 1; the benchmarks and the scale suite,
// which run alone, do not.
const ControlPlaneGOMAXPROCSEnv = "KARP_E2E_CONTROL_PLANE_GOMAXPROCS"

func controlPlaneGOMAXPROCS() (int, error) {
	v := os.Getenv(ControlPlaneGOMAXPROCSEnv)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", ControlPlaneGOMAXPROCSEnv, v)
	}
	return n, nil
}

// Current returns the package's running cluster; it fails the test when
// TestMain did not call Main.
func Current(t testing.TB) *Framework {
	t.Helper()
	if current == nil {
		t.Fatal("no local cluster: the package's TestMain must call framework.Main(m)")
	}
	if _, seen := registered.LoadOrStore(t, true); !seen {
		t.Cleanup(func() { registered.Delete(t) })
		restateFailures(t)
		recordDuration(t, time.Now())
	}
	return current
}

// registered holds the tests whose first Current registered their
// clean-ups (restateFailures, recordDuration).
var registered sync.Map // testing.TB → bool

// TimesEnv names a file each test of the tier appends a line to when it
// ends: its seconds from its first Current, its package, its name and
// PASS or FAIL, tab-separated; each package adds one line when it stops,
// its wall seconds, its name, "(package)" and the CPU it and its child
// processes used (its control plane and controllers). `make e2e` prints
// them, so a CI log says where the tier's minutes and CPU went.
const TimesEnv = "KARP_E2E_TIMES"

// packageName is the test binary's package, for KARP_E2E_TIMES.
func packageName() string {
	return strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
}

// recordDuration appends the test's line to the KARP_E2E_TIMES file when
// the test ends.
func recordDuration(t testing.TB, start time.Time) {
	path := os.Getenv(TimesEnv)
	if path == "" {
		return
	}
	t.Cleanup(func() {
		result := "PASS"
		if t.Failed() {
			result = "FAIL"
		}
		line := fmt.Sprintf("%.1f\t%s\t%s\t%s\n", time.Since(start).Seconds(), packageName(), t.Name(), result)
		if err := appendLine(path, line); err != nil {
			t.Logf("recording the test's time: %v", err)
		}
	})
}

// recordPackage appends the package's line to the KARP_E2E_TIMES file:
// called once the cluster stopped, so the CPU of its processes, waited
// for, counts among the children's.
func recordPackage(start time.Time) {
	path := os.Getenv(TimesEnv)
	if path == "" {
		return
	}
	var self, children syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) != nil || syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) != nil {
		return
	}
	cpu := time.Duration(self.Utime.Nano() + self.Stime.Nano() + children.Utime.Nano() + children.Stime.Nano())
	line := fmt.Sprintf("%.1f\t%s\t(package)\tcpu=%.0fs\n", time.Since(start).Seconds(), packageName(), cpu.Seconds())
	if err := appendLine(path, line); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: recording the package's time: %v\n", err)
	}
}

// appendLine appends line to the file at path with one short O_APPEND
// write, so the packages the tier runs at once do not interleave within
// a line.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(line)
	return errors.Join(werr, f.Close())
}

// failures holds, per test, the messages the framework's waits failed
// with (Poll, Eventually) and those of Errorf.
var failures sync.Map // testing.TB → *failureLog

type failureLog struct {
	mu   sync.Mutex
	msgs []string
}

// Errorf is t.Errorf for a failure that should also close the test's
// output: restateFailures repeats it after the logs a failure prints.
func Errorf(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	recordFailure(t, msg)
	t.Error(msg)
}

// recordFailure keeps msg for restateFailures. Safe from any goroutine.
func recordFailure(t testing.TB, msg string) {
	v, _ := failures.LoadOrStore(t, &failureLog{})
	l := v.(*failureLog)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, msg)
}

// restateFailures makes a failed test end with the failures recorded for
// it. The controller's log and the cluster's state are printed when a
// test fails, and can run to thousands of lines after the message that
// says what failed; CI shows the head and tail of a long output.
// Registered once per test, on its first Current, so the clean-up runs
// after every later one.
func restateFailures(t testing.TB) {
	t.Cleanup(func() {
		var msgs []string
		if v, ok := failures.LoadAndDelete(t); ok {
			l := v.(*failureLog)
			l.mu.Lock()
			msgs = slices.Clone(l.msgs)
			l.mu.Unlock()
		}
		if !t.Failed() {
			return
		}
		if len(msgs) == 0 {
			t.Logf("%s failed: the error is above the controller's log and the cluster's state", t.Name())
			return
		}
		msg := strings.Join(msgs, "; ")
		if len(msg) > 2000 {
			msg = msg[:2000] + " ..."
		}
		t.Logf("%s failed: %s", t.Name(), msg)
	})
}
