package options

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Defaults, as upstream.
const (
	// DefaultVMMemoryOverheadPercent is the share of an instance type's
	// memory the hypervisor and OS take before the kubelet sees it.
	DefaultVMMemoryOverheadPercent = 0.075
	// DefaultRefreshInterval is how long discovered subnets and AMIs are
	// cached before the selectors are queried again.
	DefaultRefreshInterval = time.Minute
	// MinRefreshInterval is the shortest refresh interval accepted.
	MinRefreshInterval = time.Minute
	// DefaultSSMAliasCacheTTL is how long the AMI IDs an alias reads from
	// SSM are reused: upstream's fixed day.
	DefaultSSMAliasCacheTTL = 24 * time.Hour
)

// Options are the AWS provider's settings. Region and credentials are not
// among them: they come from the AWS SDK's default chain (AWS_REGION,
// profiles, IRSA or Pod Identity, IMDS).
type Options struct {
	// ClusterName names the cluster in tags, discovery filters, instance
	// profile names and user data. Required.
	ClusterName string
	// ClusterEndpoint is the API server URL nodes join; empty means it is
	// discovered (eks:DescribeCluster).
	ClusterEndpoint string
	// ClusterCABundle is the base64 PEM CA of the API server written into
	// user data; empty means the controller's own rest config's CA.
	ClusterCABundle string
	// IsolatedVPC says the controller cannot reach public AWS endpoints:
	// the Pricing API is not called and the embedded prices are used.
	IsolatedVPC bool
	// VMMemoryOverheadPercent of each instance type's memory is subtracted
	// from its memory capacity (0.075 = 7.5%).
	VMMemoryOverheadPercent float64
	// ReservedENIs network interfaces per instance are left out of the
	// ENI-limited max pods (e.g. 1 with VPC CNI custom networking).
	ReservedENIs int
	// InterruptionQueue is the SQS queue name of the interruption events;
	// empty disables interruption handling.
	InterruptionQueue string
	// AMIRefreshInterval and SubnetRefreshInterval are how long AMI and
	// subnet discovery results are cached.
	AMIRefreshInterval    time.Duration
	SubnetRefreshInterval time.Duration
	// SSMAliasCacheTTL is how long the AMI IDs an alias (al2023@latest)
	// reads from SSM are reused before SSM is asked again. karp's own
	// setting: upstream always keeps them a day, which is the default.
	SSMAliasCacheTTL time.Duration
	// EKSControlPlane reads the Kubernetes version (which EKS-optimized AMI
	// an alias resolves to) from eks:DescribeCluster instead of the API
	// server's discovery endpoint, as upstream.
	EKSControlPlane bool
	// DisableDryRun, EnableZonalShift and FeatureGates are upstream's
	// settings; Inert names those that change nothing in karp yet.
	DisableDryRun    bool
	EnableZonalShift bool
	// FeatureGates are --aws-feature-gates (AWS_FEATURE_GATES): the AWS
	// provider's own gates, Name=bool pairs; names karp does not know are
	// ignored, as upstream ignores them.
	FeatureGates map[string]bool

	// envErrs are environment values that did not parse; Validate reports
	// them.
	envErrs []error
}

// AddFlags registers every option on fs, defaulting each from its
// environment variable when set, else from upstream's default. The returned
// Options is filled when fs is parsed; call Validate afterwards.
func AddFlags(fs *flag.FlagSet) *Options {
	o := &Options{}
	fs.StringVar(&o.ClusterName, "cluster-name", env("CLUSTER_NAME", ""), "[REQUIRED] The kubernetes cluster name for resource tags and discovery.")
	fs.StringVar(&o.ClusterEndpoint, "cluster-endpoint", env("CLUSTER_ENDPOINT", ""), "The external kubernetes cluster endpoint for new nodes to connect with. If not specified, it is discovered with eks:DescribeCluster on --cluster-name.")
	fs.StringVar(&o.ClusterCABundle, "cluster-ca-bundle", env("CLUSTER_CA_BUNDLE", ""), "Cluster CA bundle for nodes to use for TLS connections with the API server. If not set, this is taken from the controller's TLS configuration.")
	fs.BoolVar(&o.IsolatedVPC, "isolated-vpc", o.envBool("ISOLATED_VPC", false), "If true, then assume we can't reach AWS services which don't have a VPC endpoint. This also has the effect of disabling look-ups to the AWS on-demand pricing endpoint.")
	fs.Float64Var(&o.VMMemoryOverheadPercent, "vm-memory-overhead-percent", o.envFloat("VM_MEMORY_OVERHEAD_PERCENT", DefaultVMMemoryOverheadPercent), "The VM memory overhead as a percent that will be subtracted from the total memory for all instance types. The value of 0.075 equals to 7.5%.")
	fs.IntVar(&o.ReservedENIs, "reserved-enis", o.envInt("RESERVED_ENIS", 0), "Reserved ENIs are not included in the calculations for max-pods or kube-reserved. This is most often used in the VPC CNI custom networking setup.")
	fs.StringVar(&o.InterruptionQueue, "interruption-queue", env("INTERRUPTION_QUEUE", ""), "Interruption queue is the name of the SQS queue used for processing interruption events from EC2. Interruption handling is disabled if not specified.")
	fs.DurationVar(&o.AMIRefreshInterval, "ami-refresh-interval", o.envDuration("AMI_REFRESH_INTERVAL", DefaultRefreshInterval), "How long discovered AMIs are cached before the AMI selectors are queried again (at least 1m).")
	fs.DurationVar(&o.SubnetRefreshInterval, "subnet-refresh-interval", o.envDuration("SUBNET_REFRESH_INTERVAL", DefaultRefreshInterval), "How long discovered subnets are cached before the subnet selectors are queried again (at least 1m).")
	fs.BoolVar(&o.EKSControlPlane, "eks-control-plane", o.envBool("EKS_CONTROL_PLANE", false), "Read the Kubernetes version from eks:DescribeCluster instead of the API server's discovery endpoint.")
	fs.BoolVar(&o.DisableDryRun, "disable-dry-run", o.envBool("DISABLE_DRY_RUN", false), "Skip the authorization dry runs of the launch calls (CreateLaunchTemplate, CreateFleet, RunInstances) when validating an EC2NodeClass.")
	fs.BoolVar(&o.EnableZonalShift, "enable-zonal-shift", o.envBool("ENABLE_ZONAL_SHIFT", false), "Honour the cluster's ARC zonal shifts: launch no instances in a zone shifted away from. The cluster must be registered with zonal shift (read with eks:DescribeCluster and arc-zonal-shift:GetManagedResource at start).")
	o.FeatureGates = map[string]bool{FeatureNodeClassCEL: false}
	fs.Var(gateFlag(o.FeatureGates), "aws-feature-gates", "The AWS provider's optional features: comma-separated Name=true|false pairs ("+FeatureNodeClassCEL+", alpha, default false); unknown names are ignored.")
	if v, ok := os.LookupEnv("AWS_FEATURE_GATES"); ok {
		if err := gateFlag(o.FeatureGates).Set(v); err != nil {
			o.envErrs = append(o.envErrs, fmt.Errorf("AWS_FEATURE_GATES: %w", err))
		}
	}
	fs.DurationVar(&o.SSMAliasCacheTTL, "ssm-alias-cache-ttl", o.envDuration("SSM_ALIAS_CACHE_TTL", DefaultSSMAliasCacheTTL), "How long the AMI IDs an amiSelectorTerms alias reads from SSM Parameter Store are reused before SSM is read again, so how soon a newly published EKS-optimized AMI release is noticed (at least 1m).")
	return o
}

// Validate reports every missing or invalid option, each named by its flag
// and environment variable.
func (o *Options) Validate() error {
	errs := append([]error(nil), o.envErrs...)
	if o.ClusterName == "" {
		errs = append(errs, errors.New("--cluster-name (CLUSTER_NAME) is required"))
	}
	if o.ClusterEndpoint != "" {
		if u, err := url.Parse(o.ClusterEndpoint); err != nil || !u.IsAbs() || u.Hostname() == "" {
			errs = append(errs, fmt.Errorf("--cluster-endpoint (CLUSTER_ENDPOINT) %q is not an absolute URL with a host", o.ClusterEndpoint))
		}
	}
	if o.VMMemoryOverheadPercent < 0 || o.VMMemoryOverheadPercent >= 1 {
		errs = append(errs, fmt.Errorf("--vm-memory-overhead-percent (VM_MEMORY_OVERHEAD_PERCENT) %v must be at least 0 and below 1", o.VMMemoryOverheadPercent))
	}
	if o.ReservedENIs < 0 {
		errs = append(errs, fmt.Errorf("--reserved-enis (RESERVED_ENIS) %d is negative", o.ReservedENIs))
	}
	if o.AMIRefreshInterval < MinRefreshInterval {
		errs = append(errs, fmt.Errorf("--ami-refresh-interval (AMI_REFRESH_INTERVAL) %s is shorter than %s", o.AMIRefreshInterval, MinRefreshInterval))
	}
	if o.SubnetRefreshInterval < MinRefreshInterval {
		errs = append(errs, fmt.Errorf("--subnet-refresh-interval (SUBNET_REFRESH_INTERVAL) %s is shorter than %s", o.SubnetRefreshInterval, MinRefreshInterval))
	}
	if o.SSMAliasCacheTTL < MinRefreshInterval {
		errs = append(errs, fmt.Errorf("--ssm-alias-cache-ttl (SSM_ALIAS_CACHE_TTL) %s is shorter than %s", o.SSMAliasCacheTTL, MinRefreshInterval))
	}
	return errors.Join(errs...)
}

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// The typed env helpers return the default for an unset variable; a set
// variable that does not parse is remembered and reported by Validate, so
// a typo in a Helm value stops the controller instead of being ignored.
func (o *Options) envBool(key string, def bool) bool {
	v, ok := os.LookupEnv(key)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		o.envErrs = append(o.envErrs, fmt.Errorf("%s %q is not a boolean", key, v))
		return def
	}
	return b
}

func (o *Options) envFloat(key string, def float64) float64 {
	v, ok := os.LookupEnv(key)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		o.envErrs = append(o.envErrs, fmt.Errorf("%s %q is not a number", key, v))
		return def
	}
	return f
}

func (o *Options) envInt(key string, def int) int {
	v, ok := os.LookupEnv(key)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		o.envErrs = append(o.envErrs, fmt.Errorf("%s %q is not an integer", key, v))
		return def
	}
	return n
}

func (o *Options) envDuration(key string, def time.Duration) time.Duration {
	v, ok := os.LookupEnv(key)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		o.envErrs = append(o.envErrs, fmt.Errorf("%s %q is not a duration", key, v))
		return def
	}
	return d
}

// FeatureNodeClassCEL is the AWS gate that allows CEL expressions in an
// EC2NodeClass's kubelet settings: with it on, kubelet.maxPods may be an
// expression evaluated per instance type (pkg/cloudprovider/aws/
// instancetype/kubeletcel); off, an expression is ignored and the class is
// not valid (KubeletExpressionsDisabled), as upstream.
const FeatureNodeClassCEL = "NodeClassCEL"

// gateFlag reads Name=bool pairs into a map, ignoring names it does not
// hold (upstream's map-string-bool with unknown gates ignored).
type gateFlag map[string]bool

func (g gateFlag) String() string {
	names := make([]string, 0, len(g))
	for name := range g {
		names = append(names, name)
	}
	sort.Strings(names)
	pairs := make([]string, 0, len(names))
	for _, name := range names {
		pairs = append(pairs, fmt.Sprintf("%s=%t", name, g[name]))
	}
	return strings.Join(pairs, ",")
}

func (g gateFlag) Set(value string) error {
	for _, pair := range strings.Split(value, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, raw, ok := strings.Cut(pair, "=")
		if !ok {
			return fmt.Errorf("%q is not Name=true|false", pair)
		}
		on, err := strconv.ParseBool(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("%q: %q is not a boolean", pair, raw)
		}
		if _, known := g[strings.TrimSpace(name)]; known {
			g[strings.TrimSpace(name)] = on
		}
	}
	return nil
}

// Inert names each setting that is accepted but changes nothing in karp's
// AWS provider yet, so the operator can say so at start instead of
// silently ignoring it.
func (o *Options) Inert() []string {
	var out []string
	if o.FeatureGates[FeatureNodeClassCEL] {
		// The gate acts on kubelet.maxPods; upstream also takes expressions
		// in kubeReserved and systemReserved, which karp refuses for now.
		out = append(out, "AWS feature gate "+FeatureNodeClassCEL+"=true: karp evaluates CEL expressions in an EC2NodeClass's kubelet.maxPods only; "+
			"an expression in kubelet.kubeReserved or kubelet.systemReserved is not evaluated, and the class is reported invalid")
	}
	return out
}
