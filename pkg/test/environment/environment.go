package environment

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/apis/crds"
	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
)

// TierEnv names the environment variable the Makefile sets to the test tier
// it runs (unit, integration, e2e).
const TierEnv = "KARP_TEST_TIER"

// Environment is a running etcd + kube-apiserver with the karp CRDs
// installed and Established.
type Environment struct {
	// Config is an admin (system:masters) config for the API server.
	Config *rest.Config
	// Client uses Scheme; it reads straight from the API server (no cache).
	Client client.Client
	// Scheme has client-go's built-in types, karp v1 and v1alpha1, kwok v1alpha1, aws v1
	// and autoscaling.x-k8s.io v1 (ProvisioningRequest) and v1beta1 (CapacityBuffer).
	Scheme *runtime.Scheme

	env     *envtest.Environment
	dataDir string
}

// NewScheme returns a scheme with the built-in Kubernetes types,
// karpenter.sh/v1, karpenter.kwok.sh/v1alpha1 and karpenter.k8s.aws/v1
// registered.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(karpv1.AddToScheme(scheme))
	utilruntime.Must(karpv1alpha1.AddToScheme(scheme))
	utilruntime.Must(kwokv1alpha1.AddToScheme(scheme))
	utilruntime.Must(autoscalingv1.AddToScheme(scheme))
	utilruntime.Must(autoscalingv1beta1.AddToScheme(scheme))
	utilruntime.Must(awsv1.AddToScheme(scheme))
	return scheme
}

// Start builds the binaries if needed, starts etcd and kube-apiserver and
// installs the karp CRDs. The context bounds only the start-up; call Stop to
// shut the processes down.
//
// Under KARP_TEST_TIER=unit (set by `make test-unit`) it fails instead: a
// test that starts an API server belongs in the integration tier (see
// hack/test-tiers.sh).
func Start(ctx context.Context) (*Environment, error) {
	if tier := os.Getenv(TierEnv); tier == "unit" {
		return nil, fmt.Errorf("%s=%s: this test starts etcd and kube-apiserver, which the unit tier does not; "+
			"hack/test-tiers.sh puts a package whose tests import pkg/test/environment in the integration tier", TierEnv, tier)
	}
	binDir, err := EnsureBinaries()
	if err != nil {
		return nil, err
	}
	all, err := crds.All()
	if err != nil {
		return nil, fmt.Errorf("loading karp CRDs: %w", err)
	}
	dataDir, err := os.MkdirTemp(tmpfsDir(), "karp-etcd-")
	if err != nil {
		return nil, fmt.Errorf("creating etcd data dir: %w", err)
	}
	e := &Environment{Scheme: NewScheme(), dataDir: dataDir}
	e.env = &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		Scheme:                e.Scheme,
		CRDInstallOptions: envtest.CRDInstallOptions{
			CRDs:               all,
			Scheme:             e.Scheme,
			MaxTime:            startTimeout(ctx),
			PollInterval:       50 * time.Millisecond,
			ErrorIfPathMissing: false,
		},
		ControlPlaneStartTimeout: startTimeout(ctx),
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	e.env.ControlPlane.Etcd = &envtest.Etcd{DataDir: dataDir}
	e.env.ControlPlane.Etcd.Configure().Set("unsafe-no-fsync", "true")
	// No API priority and fairness: one test client needs no fair
	// queuing, and leaving out its bootstrap configuration and
	// controllers takes about 0.4 CPU-seconds off each start (of about
	// 5), which every integration package pays.
	e.env.ControlPlane.GetAPIServer().Configure().Set("enable-priority-and-fairness", "false")

	cfg, err := startOnOneProcessor(e.env)
	if err != nil {
		stopErr := e.env.Stop()
		_ = os.RemoveAll(dataDir)
		return nil, errors.Join(fmt.Errorf("starting etcd and kube-apiserver from %s: %w", binDir, err), stopErr)
	}
	e.Config = cfg
	e.Client, err = client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("building client: %w", err), e.Stop())
	}
	return e, nil
}

// startOnOneProcessor starts etcd and kube-apiserver with GOMAXPROCS=1
// (envtest gives its processes the test's environment). One client's
// requests keep neither server busy on more than one core, and on one
// processor their garbage collector and scheduler do less work: a start
// and a handful of requests took 3.6 CPU-seconds against 4.3, at the same
// wall time, and the integration tier starts one per package. The setting
// lives in this process's environment while the servers start, so starts
// take turns (startMu).
func startOnOneProcessor(env *envtest.Environment) (*rest.Config, error) {
	startMu.Lock()
	defer startMu.Unlock()
	was, set := os.LookupEnv("GOMAXPROCS")
	if err := os.Setenv("GOMAXPROCS", "1"); err != nil {
		return nil, err
	}
	defer func() {
		if set {
			_ = os.Setenv("GOMAXPROCS", was)
		} else {
			_ = os.Unsetenv("GOMAXPROCS")
		}
	}()
	return env.Start()
}

// startMu serializes startOnOneProcessor's changes to the environment.
var startMu sync.Mutex

// New starts an Environment for one test and stops it when the test ends.
// A start failure fails the test; it is never skipped.
func New(t testing.TB) *Environment {
	t.Helper()
	e, err := Start(t.Context())
	if err != nil {
		t.Fatalf("starting test environment: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping test environment: %v", err)
		}
	})
	return e
}

// Create creates objs in the API server, failing the test on an error, and
// deletes them (best effort) when the test ends, so tests sharing one
// Environment start from the same world.
func (e *Environment) Create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		if err := e.Client.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
		t.Cleanup(func() { _ = e.Client.Delete(context.WithoutCancel(t.Context()), obj) })
	}
}

// Stop terminates kube-apiserver and etcd and removes etcd's data.
func (e *Environment) Stop() error {
	err := e.env.Stop()
	return errors.Join(err, os.RemoveAll(e.dataDir))
}

// startTimeout is the time left before ctx's deadline, or two minutes.
func startTimeout(ctx context.Context) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return time.Until(deadline)
	}
	return 2 * time.Minute
}

// tmpfsDir returns /dev/shm when it is a writable directory (etcd is much
// faster on tmpfs), else the default temporary directory.
func tmpfsDir() string {
	const shm = "/dev/shm"
	if fi, err := os.Stat(shm); err == nil && fi.IsDir() {
		if f, err := os.CreateTemp(shm, ".karp-probe-"); err == nil {
			name := f.Name()
			_ = f.Close()
			_ = os.Remove(name)
			return shm
		}
	}
	return os.TempDir()
}

// Main is a test package's TestMain body: it starts one Environment into
// *env, runs the tests, stops it and exits with the tests' code (a failure
// to stop is printed, not counted). A start failure exits non-zero; the
// tests are never skipped.
func Main(m *testing.M, env **Environment) {
	e, err := Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
