package operator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	cpmetrics "github.com/karp-autoscaler/karp/pkg/cloudprovider/metrics"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/overlay"
	"github.com/karp-autoscaler/karp/pkg/controllers"
	karpevents "github.com/karp-autoscaler/karp/pkg/events"
	"github.com/karp-autoscaler/karp/pkg/index"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/operator/fence"
	"github.com/karp-autoscaler/karp/pkg/options"
)

// Component is the name karp uses as its user agent, event source and
// logger name.
const Component = "karpenter"

// inClusterNamespaceFile holds the pod's namespace when running in a cluster.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// fallbackLeaseNamespace holds the Lease when karp runs outside a cluster
// and no --leader-election-namespace is given.
const fallbackLeaseNamespace = "kube-system"

// Operator is a built, not yet started, karp controller process.
type Operator struct {
	Manager    manager.Manager
	Options    *options.Options
	Clock      clock.Clock
	KubeClient client.Client
	Recorder   events.EventRecorder
	// fence gates writes on the leader-election Lease; nil without
	// leader election.
	fence *fence.Fence
}

// LeaderElectionTimings tune the Lease; zero fields keep the defaults
// (controller-runtime's and upstream's: 15s lease, 10s renew deadline, 2s
// retry).
type LeaderElectionTimings struct {
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
}

// defaultLeaderElectionTimings are controller-runtime's defaults, spelled
// out so the write fence and the elector agree on the renew deadline.
var defaultLeaderElectionTimings = LeaderElectionTimings{LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}

// withDefaults fills the zero fields from defaultLeaderElectionTimings.
func (t LeaderElectionTimings) withDefaults() LeaderElectionTimings {
	if t.LeaseDuration <= 0 {
		t.LeaseDuration = defaultLeaderElectionTimings.LeaseDuration
	}
	if t.RenewDeadline <= 0 {
		t.RenewDeadline = defaultLeaderElectionTimings.RenewDeadline
	}
	if t.RetryPeriod <= 0 {
		t.RetryPeriod = defaultLeaderElectionTimings.RetryPeriod
	}
	return t
}

type config struct {
	clock      clock.Clock
	leader     LeaderElectionTimings
	metricsReg prometheus.Registerer
	// skipNameValidation lets one process build several operators.
	skipNameValidation bool
}

// Option adjusts New for tests and embedders.
type Option func(*config)

// WithClock sets the controllers' clock (default: the real clock).
func WithClock(clk clock.Clock) Option { return func(c *config) { c.clock = clk } }

// WithoutControllerNameValidation lets one process build several
// operators, as tests that run the controller more than once do;
// controller-runtime otherwise refuses a second controller of a name.
func WithoutControllerNameValidation() Option {
	return func(c *config) { c.skipNameValidation = true }
}

// WithLeaderElectionTimings overrides the Lease timings.
func WithLeaderElectionTimings(t LeaderElectionTimings) Option {
	return func(c *config) { c.leader = t }
}

// NewScheme returns the scheme of every type karp reads or writes.
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

// New builds the manager from restConfig and opts: field indexes, probes,
// metrics. Nothing runs until Start.
func New(ctx context.Context, restConfig *rest.Config, opts *options.Options, extra ...Option) (*Operator, error) {
	cfg := config{clock: clock.RealClock{}, metricsReg: crmetrics.Registry}
	for _, o := range extra {
		o(&cfg)
	}
	restConfig = rest.CopyConfig(restConfig)
	restConfig.QPS = float32(opts.KubeClientQPS)
	restConfig.Burst = opts.KubeClientBurst
	restConfig.UserAgent = Component
	cfg.leader = cfg.leader.withDefaults()
	var writeFence *fence.Fence
	if !opts.DisableLeaderElection {
		// Every client of the manager (the controllers', the cloud
		// provider's built on it, the event recorders, the elector's own)
		// goes through the fence: writes stop once the Lease has not been
		// renewed for the renew deadline, before another replica can take
		// it (see pkg/operator/fence). It measures real time, as the
		// elector does, whatever clock the controllers are given.
		writeFence = fence.New(clock.RealClock{}, cfg.leader.RenewDeadline, leaseNamespace(opts.LeaderElectionNamespace), opts.LeaderElectionName)
		restConfig.Wrap(writeFence.Wrap)
	}

	mo := managerOptions(opts, cfg.leader)
	if cfg.skipNameValidation {
		mo.Controller.SkipNameValidation = &cfg.skipNameValidation
	}
	mgr, err := manager.New(restConfig, mo)
	if err != nil {
		return nil, fmt.Errorf("building manager: %w", err)
	}
	if err := index.Install(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, fmt.Errorf("installing field indexes: %w", err)
	}
	if err := addProbes(mgr); err != nil {
		return nil, err
	}
	if err := metrics.Register(cfg.metricsReg); err != nil {
		return nil, fmt.Errorf("registering metrics: %w", err)
	}
	// karp's own recorder, not the manager's: client-go's broadcaster keeps
	// a series' first note, so a changed reason would not show (see
	// pkg/events). Event times are wall times users read, so it keeps the
	// real clock whatever clock the controllers are given.
	recorder := karpevents.NewRecorder(mgr.GetClient(), mgr.GetScheme(), clock.RealClock{}, log.FromContext(ctx).WithName("events"), Component)
	if err := mgr.Add(recorder); err != nil {
		return nil, fmt.Errorf("adding the event recorder: %w", err)
	}
	return &Operator{
		Manager:    mgr,
		Options:    opts,
		Clock:      cfg.clock,
		KubeClient: mgr.GetClient(),
		Recorder:   recorder,
		fence:      writeFence,
	}, nil
}

func managerOptions(opts *options.Options, leader LeaderElectionTimings) manager.Options {
	mo := manager.Options{
		Scheme: NewScheme(),
		Cache: cache.Options{
			// Managed fields are never read; dropping them saves memory.
			DefaultTransform: stripManagedFields,
			// Pods keep only what karp reads, and alike pods share their
			// common parts (see newPodTransform); workload controllers drop
			// their pod templates (see slimWorkload).
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Pod{}:         {Transform: newPodTransform(newPodInterner())},
				&appsv1.Deployment{}:  {Transform: slimWorkload},
				&appsv1.ReplicaSet{}:  {Transform: slimWorkload},
				&appsv1.StatefulSet{}: {Transform: slimWorkload},
			},
		},
		Metrics:                       metricsserver.Options{BindAddress: bindAddress(opts.MetricsPort), ExtraHandlers: profilingHandlers(opts.EnableProfiling)},
		HealthProbeBindAddress:        bindAddress(opts.HealthProbePort),
		LeaderElection:                !opts.DisableLeaderElection,
		LeaderElectionID:              opts.LeaderElectionName,
		LeaderElectionNamespace:       leaseNamespace(opts.LeaderElectionNamespace),
		LeaderElectionResourceLock:    "leases",
		LeaderElectionReleaseOnCancel: true,
		BaseContext:                   context.Background, //nolint:forbidigo // the manager's base context: the process root the operator owns
	}
	leader = leader.withDefaults()
	mo.LeaseDuration = &leader.LeaseDuration
	mo.RenewDeadline = &leader.RenewDeadline
	mo.RetryPeriod = &leader.RetryPeriod
	return mo
}

// bindAddress turns a port into a listen address; 0 disables the server.
func bindAddress(port int) string {
	if port == 0 {
		return "0"
	}
	return ":" + strconv.Itoa(port)
}

// leaseNamespace is the configured namespace, else the pod's own, else kube-system.
func leaseNamespace(configured string) string {
	if configured != "" {
		return configured
	}
	if raw, err := os.ReadFile(inClusterNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(raw)); ns != "" {
			return ns
		}
	}
	return fallbackLeaseNamespace
}

// addProbes serves /healthz (the process is alive) and /readyz (the cache
// has synced and the karp CRDs are served).
func addProbes(mgr manager.Manager) error {
	return errors.Join(
		mgr.AddHealthzCheck("ping", healthz.Ping),
		mgr.AddReadyzCheck("ping", healthz.Ping),
		mgr.AddReadyzCheck("cache-sync", cacheSynced(mgr.GetCache())),
		mgr.AddReadyzCheck("crds", crdsResolvable(mgr)),
	)
}

func cacheSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("informer caches have not synced")
		}
		return nil
	}
}

func crdsResolvable(mgr manager.Manager) healthz.Checker {
	kinds := []schema.GroupKind{
		{Group: karpv1.Group, Kind: "NodePool"},
		{Group: karpv1.Group, Kind: "NodeClaim"},
	}
	return func(*http.Request) error {
		for _, gk := range kinds {
			if _, err := mgr.GetRESTMapper().RESTMapping(gk, karpv1.SchemeGroupVersion.Version); err != nil {
				return fmt.Errorf("resolving %s: %w", gk, err)
			}
		}
		return nil
	}
}

// Deps returns the dependencies controllers are built from, with cp
// decorated with metrics, with leader election fenced (no launch or
// termination while the Lease may be lost) and, with the NodeOverlay
// feature gate on, with the NodeOverlays applied.
func (o *Operator) Deps(cp cloudprovider.CloudProvider) controllers.Deps {
	// With the NodeOverlay gate on, the overlays apply innermost, so that
	// launches through them are fenced and measured like any other.
	var overlays *overlay.CloudProvider
	if o.Options != nil && o.Options.FeatureGates.Enabled(options.FeatureNodeOverlay) {
		overlays = overlay.Decorate(cp, o.KubeClient)
		cp = overlays
	}
	if o.fence != nil {
		cp = &fencedCloudProvider{CloudProvider: cp, fence: o.fence}
	}
	return controllers.Deps{
		KubeClient:    o.KubeClient,
		APIReader:     o.Manager.GetAPIReader(),
		CloudProvider: cpmetrics.Decorate(cp),
		Overlays:      overlays,
		Clock:         o.Clock,
		Recorder:      o.Recorder,
		Options:       o.Options,
	}
}

// Register adds controllers to the manager.
func (o *Operator) Register(ctx context.Context, list ...controllers.Controller) error {
	for _, c := range list {
		if err := c.Register(ctx, o.Manager); err != nil {
			return fmt.Errorf("registering controller %s: %w", c.Name(), err)
		}
	}
	return nil
}

// Start runs the manager until ctx is done; on cancel it releases the Lease.
func (o *Operator) Start(ctx context.Context) error {
	return o.Manager.Start(ctx)
}

// Elected is closed once this process leads (at once without leader election).
func (o *Operator) Elected() <-chan struct{} { return o.Manager.Elected() }

// FreePort returns a TCP port that was free a moment ago on 127.0.0.1, for
// tests and local runs that start several processes.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
