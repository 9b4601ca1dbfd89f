package options_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/options"
)

func parse(t *testing.T, args ...string) (*options.Options, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := options.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return o, o.Validate()
}

func TestDefaultsMatchUpstream(t *testing.T) {
	o, err := parse(t, "--cluster-name=test-cluster")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ got, want any }{
		"cluster endpoint":        {o.ClusterEndpoint, ""},
		"cluster CA bundle":       {o.ClusterCABundle, ""},
		"isolated VPC":            {o.IsolatedVPC, false},
		"VM memory overhead":      {o.VMMemoryOverheadPercent, 0.075},
		"reserved ENIs":           {o.ReservedENIs, 0},
		"interruption queue":      {o.InterruptionQueue, ""},
		"AMI refresh interval":    {o.AMIRefreshInterval, time.Minute},
		"subnet refresh interval": {o.SubnetRefreshInterval, time.Minute},
		"SSM alias cache TTL":     {o.SSMAliasCacheTTL, 24 * time.Hour},
		"EKS control plane":       {o.EKSControlPlane, false},
		"disable dry run":         {o.DisableDryRun, false},
		"enable zonal shift":      {o.EnableZonalShift, false},
		"NodeClassCEL":            {o.FeatureGates[options.FeatureNodeClassCEL], false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", name, tc.got, tc.want)
		}
	}
}

func TestEnvironmentThenFlags(t *testing.T) {
	t.Setenv("CLUSTER_NAME", "from-env")
	t.Setenv("CLUSTER_ENDPOINT", "https://env.example.com")
	t.Setenv("ISOLATED_VPC", "true")
	t.Setenv("VM_MEMORY_OVERHEAD_PERCENT", "0.1")
	t.Setenv("RESERVED_ENIS", "1")
	t.Setenv("INTERRUPTION_QUEUE", "karpenter-queue")
	o, err := parse(t, "--cluster-name=from-flag", "--reserved-enis=2")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ got, want any }{
		"name: flag over env": {o.ClusterName, "from-flag"},
		"ENIs: flag over env": {o.ReservedENIs, 2},
		"endpoint from env":   {o.ClusterEndpoint, "https://env.example.com"},
		"isolated from env":   {o.IsolatedVPC, true},
		"overhead from env":   {o.VMMemoryOverheadPercent, 0.1},
		"queue from env":      {o.InterruptionQueue, "karpenter-queue"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", name, tc.got, tc.want)
		}
	}
}

func TestInvalidOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		env      map[string]string
		args     []string
		wantErrs []string
	}{
		"missing cluster name": {args: nil, wantErrs: []string{"--cluster-name (CLUSTER_NAME) is required"}},
		"relative endpoint": {
			args:     []string{"--cluster-name=c", "--cluster-endpoint=api.example.com"},
			wantErrs: []string{"--cluster-endpoint (CLUSTER_ENDPOINT)"},
		},
		"negative overhead": {
			args:     []string{"--cluster-name=c", "--vm-memory-overhead-percent=-0.1"},
			wantErrs: []string{"--vm-memory-overhead-percent"},
		},
		"overhead given as a percentage": {
			args:     []string{"--cluster-name=c", "--vm-memory-overhead-percent=7.5"},
			wantErrs: []string{"--vm-memory-overhead-percent"},
		},
		"negative reserved ENIs": {
			args:     []string{"--cluster-name=c", "--reserved-enis=-1"},
			wantErrs: []string{"--reserved-enis (RESERVED_ENIS) -1 is negative"},
		},
		"refresh interval too short": {
			args:     []string{"--cluster-name=c", "--ami-refresh-interval=30s", "--subnet-refresh-interval=1s"},
			wantErrs: []string{"--ami-refresh-interval", "--subnet-refresh-interval"},
		},
		"SSM alias cache TTL too short": {
			args:     []string{"--cluster-name=c", "--ssm-alias-cache-ttl=10s"},
			wantErrs: []string{"--ssm-alias-cache-ttl (SSM_ALIAS_CACHE_TTL) 10s is shorter than 1m0s"},
		},
		"unparsable environment values": {
			env:      map[string]string{"CLUSTER_NAME": "c", "RESERVED_ENIS": "one", "ISOLATED_VPC": "yes please", "VM_MEMORY_OVERHEAD_PERCENT": "7.5%"},
			wantErrs: []string{"RESERVED_ENIS \"one\"", "ISOLATED_VPC", "VM_MEMORY_OVERHEAD_PERCENT"},
		},
		"every problem at once": {
			args:     []string{"--reserved-enis=-2", "--cluster-endpoint=nope"},
			wantErrs: []string{"--cluster-name", "--reserved-enis", "--cluster-endpoint"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := parse(t, tc.args...)
			if err == nil {
				t.Fatalf("no error, want %q", tc.wantErrs)
			}
			for _, want := range tc.wantErrs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

// Upstream's settings karp accepts without acting on them are read from
// the environment the chart renders, and each is named by Inert when it
// is set to something karp does not do.
func TestUpstreamSettingsAreReadAndNamedWhenInert(t *testing.T) {
	t.Setenv("EKS_CONTROL_PLANE", "true")
	t.Setenv("ENABLE_ZONAL_SHIFT", "true")
	t.Setenv("AWS_FEATURE_GATES", "NodeClassCEL=true,SomethingNew=true")
	o, err := parse(t, "--cluster-name=test-cluster")
	if err != nil {
		t.Fatal(err)
	}
	if !o.EKSControlPlane || !o.EnableZonalShift || !o.FeatureGates[options.FeatureNodeClassCEL] {
		t.Fatalf("EKSControlPlane=%v EnableZonalShift=%v gates=%v, want the environment's", o.EKSControlPlane, o.EnableZonalShift, o.FeatureGates)
	}
	if _, ok := o.FeatureGates["SomethingNew"]; ok {
		t.Errorf("unknown gate kept: %v (upstream ignores unknown AWS gates)", o.FeatureGates)
	}
	inert := strings.Join(o.Inert(), "\n")
	// NodeClassCEL acts on kubelet.maxPods only: the reserved maps are named.
	for _, want := range []string{"NodeClassCEL=true", "kubelet.maxPods only", "kubelet.kubeReserved"} {
		if !strings.Contains(inert, want) {
			t.Errorf("Inert() does not name %s:\n%s", want, inert)
		}
	}
	// --enable-zonal-shift (package zonalshift) and --eks-control-plane
	// (package version) act: they are not named.
	for _, acting := range []string{"zonal-shift", "eks-control-plane"} {
		if strings.Contains(inert, acting) {
			t.Errorf("Inert() names --%s, which karp honours:\n%s", acting, inert)
		}
	}

	quiet, err := parse(t, "--cluster-name=test-cluster", "--eks-control-plane=false", "--enable-zonal-shift=false",
		"--disable-dry-run=true", "--aws-feature-gates=NodeClassCEL=false")
	if err != nil {
		t.Fatal(err)
	}
	if got := quiet.Inert(); len(got) != 0 {
		t.Errorf("Inert() = %q for settings karp's behaviour matches", got)
	}
}

func TestMalformedAWSFeatureGatesAreRefused(t *testing.T) {
	if _, err := parse(t, "--cluster-name=test-cluster", "--aws-feature-gates=NodeClassCEL"); err == nil {
		t.Error("--aws-feature-gates=NodeClassCEL (no value) accepted")
	}
	t.Setenv("AWS_FEATURE_GATES", "NodeClassCEL=maybe")
	_, err := parse(t, "--cluster-name=test-cluster")
	if err == nil || !strings.Contains(err.Error(), "AWS_FEATURE_GATES") {
		t.Errorf("AWS_FEATURE_GATES=NodeClassCEL=maybe: error %v, want one naming AWS_FEATURE_GATES", err)
	}
}
