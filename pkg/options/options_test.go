package options_test

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/pkg/options"
)

func parse(t *testing.T, args ...string) (*options.Options, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return options.Parse(fs, args)
}

func TestDefaultsMatchUpstream(t *testing.T) {
	o, err := parse(t)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct{ got, want any }{
		"batch idle":        {o.BatchIdleDuration, time.Second},
		"batch max":         {o.BatchMaxDuration, 10 * time.Second},
		"qps":               {o.KubeClientQPS, 200},
		"burst":             {o.KubeClientBurst, 300},
		"log level":         {o.LogLevel, "info"},
		"preference policy": {o.PreferencePolicy, options.PreferencePolicyRespect},
		"min values policy": {o.MinValuesPolicy, options.MinValuesPolicyStrict},
		"cloud provider":    {o.CloudProvider, "kwok"},
		"metrics port":      {o.MetricsPort, 8080},
		"health port":       {o.HealthProbePort, 8081},
		"lease name":        {o.LeaderElectionName, "karpenter-leader-election"},
		"leader election":   {o.DisableLeaderElection, false},
		"reserved capacity": {o.FeatureGates.Enabled(options.FeatureReservedCapacity), true},
		"node repair":       {o.FeatureGates.Enabled(options.FeatureNodeRepair), false},
		"replacement wait":  {o.DisruptionReplacementTimeout, 10 * time.Minute},
		"running jobs kept": {o.ProtectRunningJobs, true},
		"rollout budgets":   {o.RespectRolloutBudget, true},
		"replace first":     {o.ReplaceFirst, true},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", name, tc.got, tc.want)
		}
	}
}

func TestEnvironmentThenFlags(t *testing.T) {
	t.Setenv("BATCH_IDLE_DURATION", "2s")
	t.Setenv("KUBE_CLIENT_QPS", "50")
	t.Setenv("FEATURE_GATES", "NodeRepair=true")
	t.Setenv("INSTANCE_TYPES_FILE_PATH", "/catalog.json")
	t.Setenv("DISRUPTION_REPLACEMENT_TIMEOUT", "30s")
	t.Setenv("PROTECT_RUNNING_JOBS", "false")
	t.Setenv("RESPECT_ROLLOUT_BUDGET", "false")
	t.Setenv("REPLACE_FIRST", "false")
	o, err := parse(t, "--kube-client-qps=75", "--feature-gates=SpotToSpotConsolidation=true")
	if err != nil {
		t.Fatal(err)
	}
	if o.BatchIdleDuration != 2*time.Second {
		t.Errorf("batch idle = %s, want the environment's 2s", o.BatchIdleDuration)
	}
	if o.KubeClientQPS != 75 {
		t.Errorf("qps = %d, want the flag's 75 over the environment's 50", o.KubeClientQPS)
	}
	if !o.FeatureGates.Enabled(options.FeatureNodeRepair) || !o.FeatureGates.Enabled(options.FeatureSpotToSpotConsolidation) {
		t.Errorf("feature gates = %s, want NodeRepair from the environment and SpotToSpotConsolidation from the flag", o.FeatureGates.String())
	}
	if o.DisruptionReplacementTimeout != 30*time.Second {
		t.Errorf("replacement timeout = %s, want the environment's 30s", o.DisruptionReplacementTimeout)
	}
	if o.ProtectRunningJobs {
		t.Error("running Jobs protected, want the environment's false")
	}
	if o.RespectRolloutBudget {
		t.Error("rollout budgets respected, want the environment's false")
	}
	if o.ReplaceFirst {
		t.Error("expiring nodes replaced first, want the environment's false")
	}
	if o.InstanceTypesFilePath != "/catalog.json" {
		t.Errorf("instance types file = %q", o.InstanceTypesFilePath)
	}
}

func TestInvalidOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		args    []string
		wantErr string
	}{
		"fake provider is for tests only": {[]string{"--cloud-provider=fake"}, "--cloud-provider"},
		"log level":                       {[]string{"--log-level=loud"}, "--log-level"},
		"preference policy":               {[]string{"--preference-policy=Sometimes"}, "--preference-policy"},
		"min values policy":               {[]string{"--min-values-policy=Lax"}, "--min-values-policy"},
		"idle longer than max":            {[]string{"--batch-idle-duration=20s"}, "exceeds"},
		"unknown feature gate":            {[]string{"--feature-gates=Teleport=true"}, "unknown feature gate"},
		"bad feature gate value":          {[]string{"--feature-gates=NodeRepair=maybe"}, "NodeRepair"},
		"port out of range":               {[]string{"--metrics-port=70000"}, "port"},
		"zero replacement timeout":        {[]string{"--disruption-replacement-timeout=0s"}, "--disruption-replacement-timeout 0s must be positive"},
		"negative replacement timeout":    {[]string{"--disruption-replacement-timeout=-1m"}, "--disruption-replacement-timeout -1m0s must be positive"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseOfferings(t *testing.T) {
	got, err := options.ParseOfferings("m5.large/us-east-1a/spot, c5.xlarge/us-east-1b/on-demand,")
	if err != nil {
		t.Fatal(err)
	}
	want := []options.Offering{{"m5.large", "us-east-1a", "spot"}, {"c5.xlarge", "us-east-1b", "on-demand"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"m5.large", "m5.large/us-east-1a", "/us-east-1a/spot", "a/b/c/d"} {
		if _, err := options.ParseOfferings(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func TestParseClusterLimits(t *testing.T) {
	got, err := options.ParseClusterLimits(" cpu=1000, memory=4Ti,nodes=200 ")
	if err != nil {
		t.Fatal(err)
	}
	if got.Cpu().Value() != 1000 || got.Memory().Value() != 4<<40 || got.Name("nodes", "").Value() != 200 || len(got) != 3 {
		t.Errorf("parsed %v", got)
	}
	if got, err := options.ParseClusterLimits(""); err != nil || got != nil {
		t.Errorf("empty: %v %v, want no limits", got, err)
	}
	for _, bad := range []string{"cpu", "cpu=", "=4", "cpu=lots", "cpu=-1", "cpu=1,cpu=2"} {
		if _, err := options.ParseClusterLimits(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	if _, err := options.Parse(fs, []string{"--cluster-limits=cpu=many"}); err == nil || !strings.Contains(err.Error(), "--cluster-limits") {
		t.Errorf("a bad --cluster-limits gave %v, want an error naming the flag", err)
	}
}
