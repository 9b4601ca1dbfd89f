package options

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsoptions "github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/options"
)

// Preference policies (--preference-policy).
const (
	// PreferencePolicyRespect treats preferred affinities and
	// ScheduleAnyway spreads as requirements first, relaxing them one by one.
	PreferencePolicyRespect = "Respect"
	// PreferencePolicyIgnore drops preferences before scheduling.
	PreferencePolicyIgnore = "Ignore"
)

// MinValues policies (--min-values-policy).
const (
	// MinValuesPolicyStrict never launches a NodeClaim that breaks minValues.
	MinValuesPolicyStrict = "Strict"
	// MinValuesPolicyBestEffort relaxes minValues when they cannot be met.
	MinValuesPolicyBestEffort = "BestEffort"
)

// Log levels (--log-level).
const (
	LogLevelDebug = "debug"
	LogLevelInfo  = "info"
	LogLevelError = "error"
)

// Cloud providers a production controller may run (--cloud-provider).
const (
	CloudProviderKWOK = "kwok"
	CloudProviderAWS  = "aws"
)

// SelectableCloudProviders are the values --cloud-provider accepts. The
// in-memory fake provider is for tests only and is deliberately absent.
var SelectableCloudProviders = []string{CloudProviderKWOK, CloudProviderAWS}

// Options are the karp controller's settings.
type Options struct {
	// Kubeconfig is the kubeconfig to use; empty means in-cluster, then
	// $KUBECONFIG and ~/.kube/config.
	Kubeconfig string
	// CloudProvider names the provider (see SelectableCloudProviders).
	CloudProvider string
	// InstanceTypesFilePath is the kwok provider's catalog file; empty
	// means the embedded EC2 catalog.
	InstanceTypesFilePath string
	// InsufficientCapacity lists kwok offerings ("type/zone/capacity-type",
	// comma-separated) whose launches fail with insufficient capacity, to
	// exercise fallback.
	InsufficientCapacity string

	// Version asks for the build's version and commit instead of running.
	Version                 bool
	KarpenterService        string
	MetricsPort             int
	HealthProbePort         int
	KubeClientQPS           int
	KubeClientBurst         int
	EnableProfiling         bool
	DisableLeaderElection   bool
	LeaderElectionName      string
	LeaderElectionNamespace string
	MemoryLimit             int64
	CPURequests             int64
	LogLevel                string
	LogOutputPaths          string
	LogErrorOutputPaths     string
	BatchMaxDuration        time.Duration
	BatchIdleDuration       time.Duration
	// BatchHoldDuration bounds karp's batch hold (karp.sh/batch-hold); 0
	// turns it off.
	BatchHoldDuration time.Duration
	PreferencePolicy  string
	MinValuesPolicy   string
	IgnoreDRARequests bool
	// DisruptionValidationDelay is how long a consolidation decision waits
	// before it is re-checked and acted on; DisruptionPollPeriod is how
	// often the disruption loop runs when idle.
	DisruptionValidationDelay time.Duration
	DisruptionPollPeriod      time.Duration
	// DisruptionReplacementTimeout is how long a disruption command waits
	// for its replacements to initialize before it is rolled back
	// (upstream's fixed 10 minutes).
	DisruptionReplacementTimeout time.Duration
	// NodeRepairToleration, when positive, replaces how long every repair
	// policy tolerates an unhealthy node (kwok: 10 minutes).
	NodeRepairToleration time.Duration
	// ProtectRunningJobs keeps a node with a Running pod of a Job from
	// consolidation and drift until the pod ends (karp's default).
	ProtectRunningJobs bool
	// RespectRolloutBudget makes drains and consolidation respect, for a
	// pod no PodDisruptionBudget selects, its controller's rollout budget
	// (maxUnavailable) (karp's default).
	RespectRolloutBudget bool
	// ReplaceFirst launches the replacement of a node that is expiring,
	// interrupted with enough notice or being repaired ahead of its
	// deadline, and drains the node once that is initialized (karp's
	// default).
	ReplaceFirst bool
	// ClusterLimitsSource is --cluster-limits ("cpu=1000,memory=4Ti,
	// nodes=200"); ClusterLimits is what Validate parsed from it: caps on
	// every NodePool's nodes together, counted on capacity as NodePool
	// limits are.
	ClusterLimitsSource string
	ClusterLimits       corev1.ResourceList
	FeatureGates        FeatureGates
	// SchedulerConfigSource is --scheduler-config: a kube-scheduler
	// configuration document, or the path of a file holding one;
	// SchedulerConfig is what Validate read from it.
	SchedulerConfigSource string
	SchedulerConfig       *SchedulerConfig
	// AWS are the AWS provider's settings (--cluster-name, ...); they are
	// validated only with --cloud-provider=aws.
	AWS *awsoptions.Options
}

// AddFlags registers every option on fs, defaulting each from its
// environment variable when set, else from karp's default. The returned
// Options is filled when fs is parsed; call Validate afterwards.
func AddFlags(fs *flag.FlagSet) *Options {
	o := &Options{}
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to a kubeconfig; empty uses the in-cluster config, then $KUBECONFIG and ~/.kube/config.")
	fs.StringVar(&o.CloudProvider, "cloud-provider", env("CLOUD_PROVIDER", CloudProviderKWOK), "The cloud provider that launches nodes: "+strings.Join(SelectableCloudProviders, ", ")+".")
	fs.StringVar(&o.InstanceTypesFilePath, "instance-types-file-path", env("INSTANCE_TYPES_FILE_PATH", ""), "kwok provider: instance-type catalog file; empty uses the embedded EC2 catalog.")
	fs.StringVar(&o.InsufficientCapacity, "kwok-insufficient-capacity", env("KWOK_INSUFFICIENT_CAPACITY", ""), "kwok provider: comma-separated offerings (instance-type/zone/capacity-type) whose launches fail with insufficient capacity.")
	fs.BoolVar(&o.Version, "version", false, "Print the version and commit the controller was built from, then exit.")
	fs.StringVar(&o.KarpenterService, "karpenter-service", env("KARPENTER_SERVICE", ""), "The Karpenter Service name for the dynamic webhook certificate.")
	fs.IntVar(&o.MetricsPort, "metrics-port", envInt("METRICS_PORT", 8080), "The port the metric endpoint binds to for operating metrics about the controller itself.")
	fs.IntVar(&o.HealthProbePort, "health-probe-port", envInt("HEALTH_PROBE_PORT", 8081), "The port the health probe endpoint binds to for reporting controller health.")
	fs.IntVar(&o.KubeClientQPS, "kube-client-qps", envInt("KUBE_CLIENT_QPS", 200), "The smoothed rate of qps to kube-apiserver.")
	fs.IntVar(&o.KubeClientBurst, "kube-client-burst", envInt("KUBE_CLIENT_BURST", 300), "The maximum allowed burst of queries to the kube-apiserver.")
	fs.BoolVar(&o.EnableProfiling, "enable-profiling", envBool("ENABLE_PROFILING", false), "Enable the profiling on the metric endpoint.")
	fs.BoolVar(&o.DisableLeaderElection, "disable-leader-election", envBool("DISABLE_LEADER_ELECTION", false), "Disable the leader election client before executing the main loop. Disable when running replicated components for high availability is not desired.")
	fs.StringVar(&o.LeaderElectionName, "leader-election-name", env("LEADER_ELECTION_NAME", "karpenter-leader-election"), "Leader election name to create and monitor the lease if running outside the cluster.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", env("LEADER_ELECTION_NAMESPACE", ""), "Leader election namespace to create and monitor the lease if running outside the cluster (default: the pod's namespace, else kube-system).")
	fs.Int64Var(&o.MemoryLimit, "memory-limit", envInt64("MEMORY_LIMIT", -1), "Memory limit on the container running the controller; GOMEMLIMIT is set to 90% of it. -1 leaves it unset.")
	fs.Int64Var(&o.CPURequests, "cpu-requests", envInt64("CPU_REQUESTS", 1000), "CPU requests in millicores on the container running the controller.")
	fs.StringVar(&o.LogLevel, "log-level", env("LOG_LEVEL", LogLevelInfo), "Log verbosity level: debug, info or error.")
	fs.StringVar(&o.LogOutputPaths, "log-output-paths", env("LOG_OUTPUT_PATHS", "stdout"), "Comma-separated URLs or paths log output is written to.")
	fs.StringVar(&o.LogErrorOutputPaths, "log-error-output-paths", env("LOG_ERROR_OUTPUT_PATHS", "stderr"), "Comma-separated URLs or paths internal logging errors are written to.")
	fs.DurationVar(&o.BatchMaxDuration, "batch-max-duration", envDuration("BATCH_MAX_DURATION", 10*time.Second), "The maximum length of a batch window. The longer this is, the more pods we can consider for provisioning at one time which usually results in fewer but larger nodes.")
	fs.DurationVar(&o.BatchIdleDuration, "batch-idle-duration", envDuration("BATCH_IDLE_DURATION", time.Second), "The maximum amount of time with no new pending pods that if exceeded ends the current batching window.")
	fs.DurationVar(&o.BatchHoldDuration, "batch-hold-duration", envDuration("BATCH_HOLD_DURATION", 10*time.Second), "How long an initialized node of a multi-node provisioning batch may stay tainted karp.sh/batch-hold while the batch's other nodes start, so the scheduler places the batch's pods in one pass; 0 turns the hold off.")
	fs.StringVar(&o.PreferencePolicy, "preference-policy", env("PREFERENCE_POLICY", PreferencePolicyRespect), "How to treat preferences (preferred affinities, ScheduleAnyway spreads): Respect or Ignore.")
	fs.StringVar(&o.MinValuesPolicy, "min-values-policy", env("MIN_VALUES_POLICY", MinValuesPolicyStrict), "How to treat minValues: Strict or BestEffort.")
	fs.BoolVar(&o.IgnoreDRARequests, "ignore-dra-requests", envBool("IGNORE_DRA_REQUESTS", true), "Ignore pods' dynamic resource claims when provisioning.")
	fs.DurationVar(&o.DisruptionValidationDelay, "disruption-validation-delay", envDuration("DISRUPTION_VALIDATION_DELAY", 15*time.Second), "How long a consolidation decision waits before it is re-checked and acted on.")
	fs.DurationVar(&o.DisruptionPollPeriod, "disruption-poll-period", envDuration("DISRUPTION_POLL_PERIOD", 10*time.Second), "How often the disruption loop looks for nodes to disrupt when idle.")
	fs.DurationVar(&o.DisruptionReplacementTimeout, "disruption-replacement-timeout", envDuration("DISRUPTION_REPLACEMENT_TIMEOUT", 10*time.Minute), "How long a disruption waits for its replacement nodes to initialize before it is rolled back and its nodes are left alone for a while.")
	fs.DurationVar(&o.NodeRepairToleration, "node-repair-toleration", envDuration("NODE_REPAIR_TOLERATION", 0), "With the NodeRepair gate: how long a node may be unhealthy before it is replaced; 0 uses the cloud provider's repair policies.")
	fs.BoolVar(&o.ProtectRunningJobs, "protect-running-jobs", envBool("PROTECT_RUNNING_JOBS", true), "Treat a Running pod owned by a Job as karpenter.sh/do-not-disrupt: \"true\": consolidation and drift leave its node until the pod ends (expiry, interruption and terminationGracePeriod still apply). A pod opts out with karpenter.sh/do-not-disrupt: \"false\".")
	fs.BoolVar(&o.RespectRolloutBudget, "respect-rollout-budget", envBool("RESPECT_ROLLOUT_BUDGET", true), "For a pod no PodDisruptionBudget selects, never make more of its controller's replicas unavailable at once than the controller's rollout budget allows (a Deployment's or StatefulSet's maxUnavailable; 25% for a ReplicaSet alone or a Recreate Deployment; at least 1): drains wait, and consolidation leaves nodes whose pods cannot go now (terminationGracePeriod still forces a drain).")
	fs.BoolVar(&o.ReplaceFirst, "replace-first", envBool("REPLACE_FIRST", true), "Launch the capacity the pods of an expiring, interrupted or unhealthy node need before the node is drained, and drain it once that capacity is initialized, instead of deleting it at once and provisioning for its pods afterwards: ahead of expiry by the NodePool's observed launch-to-initialized time, within the first half of an interruption notice when that holds a launch, within a launch time of a repair. The deadlines (expireAfter, half the notice, repair) still hold; disruption budgets do not apply, as to the forceful paths.")
	fs.StringVar(&o.ClusterLimitsSource, "cluster-limits", env("CLUSTER_LIMITS", ""), "Limits no combination of NodePools may exceed together, counted on the capacity of every NodePool's nodes as NodePool limits are: comma-separated name=quantity pairs of resources and nodes (cpu=1000,memory=4Ti,nodes=200). Empty: none. A pod whose node would go over is told so (ClusterLimit).")
	fs.StringVar(&o.SchedulerConfigSource, "scheduler-config", env("SCHEDULER_CONFIG", ""), "The cluster's kube-scheduler configuration karp mirrors when it simulates scheduling (the PodTopologySpread default constraints): upstream Karpenter's YAML/JSON document (podTopologySpread.defaultConstraints), or a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), given inline or as the path of a file. Empty: no default constraints.")
	o.AWS = awsoptions.AddFlags(fs)
	o.FeatureGates = DefaultFeatureGates()
	fs.Var(&o.FeatureGates, "feature-gates", "Optional features: comma-separated Name=true|false pairs.")
	if v, ok := os.LookupEnv("FEATURE_GATES"); ok {
		// A malformed environment value is reported by Validate.
		o.FeatureGates.envErr = o.FeatureGates.Set(v)
	}
	return o
}

// Parse parses args into fresh Options and validates them.
func Parse(fs *flag.FlagSet, args []string) (*Options, error) {
	o := AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o, o.Validate()
}

// Validate reports every invalid option.
func (o *Options) Validate() error {
	var errs []error
	if !slices.Contains(SelectableCloudProviders, o.CloudProvider) {
		errs = append(errs, fmt.Errorf("--cloud-provider %q is not one of %s", o.CloudProvider, strings.Join(SelectableCloudProviders, ", ")))
	}
	if !slices.Contains([]string{LogLevelDebug, LogLevelInfo, LogLevelError}, o.LogLevel) {
		errs = append(errs, fmt.Errorf("--log-level %q is not one of debug, info, error", o.LogLevel))
	}
	if !slices.Contains([]string{PreferencePolicyRespect, PreferencePolicyIgnore}, o.PreferencePolicy) {
		errs = append(errs, fmt.Errorf("--preference-policy %q is not one of Respect, Ignore", o.PreferencePolicy))
	}
	if !slices.Contains([]string{MinValuesPolicyStrict, MinValuesPolicyBestEffort}, o.MinValuesPolicy) {
		errs = append(errs, fmt.Errorf("--min-values-policy %q is not one of Strict, BestEffort", o.MinValuesPolicy))
	}
	if o.BatchIdleDuration <= 0 || o.BatchMaxDuration <= 0 {
		errs = append(errs, errors.New("--batch-idle-duration and --batch-max-duration must be positive"))
	}
	if o.BatchHoldDuration < 0 {
		errs = append(errs, fmt.Errorf("--batch-hold-duration %s is negative", o.BatchHoldDuration))
	}
	if o.BatchIdleDuration > o.BatchMaxDuration {
		errs = append(errs, fmt.Errorf("--batch-idle-duration %s exceeds --batch-max-duration %s", o.BatchIdleDuration, o.BatchMaxDuration))
	}
	if o.DisruptionReplacementTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--disruption-replacement-timeout %s must be positive", o.DisruptionReplacementTimeout))
	}
	if o.KubeClientQPS <= 0 || o.KubeClientBurst <= 0 {
		errs = append(errs, errors.New("--kube-client-qps and --kube-client-burst must be positive"))
	}
	if !validPort(o.MetricsPort) || !validPort(o.HealthProbePort) {
		errs = append(errs, errors.New("--metrics-port and --health-probe-port must be between 0 and 65535 (0 disables)"))
	}
	if o.LeaderElectionName == "" {
		errs = append(errs, errors.New("--leader-election-name must not be empty"))
	}
	if _, err := ParseOfferings(o.InsufficientCapacity); err != nil {
		errs = append(errs, fmt.Errorf("--kwok-insufficient-capacity: %w", err))
	}
	if o.CloudProvider == CloudProviderAWS && o.AWS != nil {
		if err := o.AWS.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("--cloud-provider=aws: %w", err))
		}
	}
	if limits, err := ParseClusterLimits(o.ClusterLimitsSource); err != nil {
		errs = append(errs, fmt.Errorf("--cluster-limits: %w", err))
	} else {
		o.ClusterLimits = limits
	}
	if cfg, err := LoadSchedulerConfig(o.SchedulerConfigSource); err != nil {
		errs = append(errs, err)
	} else {
		o.SchedulerConfig = cfg
	}
	if o.FeatureGates.envErr != nil {
		errs = append(errs, fmt.Errorf("FEATURE_GATES: %w", o.FeatureGates.envErr))
	}
	return errors.Join(errs...)
}

func validPort(p int) bool { return p >= 0 && p <= 65535 }

// ParseClusterLimits reads "name=quantity,..." (nil for ""): each name a
// resource or "nodes", each quantity non-negative, no name twice.
func ParseClusterLimits(list string) (corev1.ResourceList, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for _, item := range strings.Split(list, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(item), "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			return nil, fmt.Errorf("%q is not name=quantity", item)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", name, value, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s=%s is negative", name, value)
		}
		if _, dup := out[corev1.ResourceName(name)]; dup {
			return nil, fmt.Errorf("%s is given twice", name)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// The typed env helpers fall back to the default when the variable does
// not parse; the flag's own value still wins when given.
func envInt(key string, def int) int {
	if v, err := strconv.Atoi(env(key, "")); err == nil {
		return v
	}
	return def
}

func envInt64(key string, def int64) int64 {
	if v, err := strconv.ParseInt(env(key, ""), 10, 64); err == nil {
		return v
	}
	return def
}

func envBool(key string, def bool) bool {
	if v, err := strconv.ParseBool(env(key, "")); err == nil {
		return v
	}
	return def
}

func envDuration(key string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(env(key, "")); err == nil {
		return v
	}
	return def
}

// Offering is one "instance-type/zone/capacity-type" entry of
// --kwok-insufficient-capacity.
type Offering struct{ InstanceType, Zone, CapacityType string }

// ParseOfferings parses a comma-separated list of
// "instance-type/zone/capacity-type" offerings; empty means none.
func ParseOfferings(list string) ([]Offering, error) {
	var out []Offering
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.Split(item, "/")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return nil, fmt.Errorf("offering %q is not instance-type/zone/capacity-type", item)
		}
		out = append(out, Offering{InstanceType: parts[0], Zone: parts[1], CapacityType: parts[2]})
	}
	return out, nil
}
