package charts_test

import (
	"flag"
	"maps"
	"os"
	"reflect"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/karp-autoscaler/karp/charts"
	"github.com/karp-autoscaler/karp/pkg/options"
)

// everySetting sets every setting the chart turns into an environment
// variable, so that each renders.
func everySetting() map[string]any {
	values := nonDefault()
	settings := values["settings"].(map[string]any)
	maps.Copy(settings, map[string]any{
		"batchHoldDuration": "5s", "preferencePolicy": "Ignore", "ignoreDRARequests": false,
		"protectRunningJobs": false, "replaceFirst": false, "clusterLimits": "cpu=1000",
		"kubeClientBurst": 80, "disruptionValidationDelay": "30s",
		"clusterEndpoint": "https://prod.example.com", "clusterCABundle": "Q0E=", "isolatedVPC": true,
		"eksControlPlane": true, "vmMemoryOverheadPercent": 0.1, "reservedENIs": "1",
		"disableDryRun": true, "enableZonalShift": true, "amiRefreshInterval": "5m", "subnetRefreshInterval": "5m",
		"awsFeatureGates": map[string]any{"nodeClassCEL": true},
	})
	return values
}

// parsedOptions is what the controller's options (core, and the AWS
// provider's within them) hold when started with no flags and the
// process environment as it is.
func parsedOptions(t *testing.T) *options.Options {
	t.Helper()
	fs := flag.NewFlagSet("karp", flag.ContinueOnError)
	o := options.AddFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	return o
}

// probes are values tried, after the one the chart renders, to see
// whether a variable changes an option: one of them differs from the
// default of every type the options read (string, bool, number,
// duration, list).
var probes = []string{"true", "false", "0", "7", "0.5", "3m", "debug", "Ignore", "x=1", "cpu=3", "https://probe.example.com"}

// TestEveryRenderedVariableIsRead: each environment variable the chart
// gives the controller, with every setting set, changes what the
// controller's options hold for some value. A variable no option reads
// would be a setting that silently does nothing.
func TestEveryRenderedVariableIsRead(t *testing.T) {
	objs := render(t, charts.Karp, charts.Release{Values: everySetting()})
	deploy := convert[appsv1.Deployment](t, objs["Deployment/autoscaler"])
	env := deploy.Spec.Template.Spec.Containers[0].Env
	// Variables the chart passes for the user (controller.env) are theirs.
	userSet := map[string]bool{"EXTRA": true}
	var names []string
	for _, e := range env {
		if userSet[e.Name] {
			continue
		}
		names = append(names, e.Name)
	}
	if len(names) < 30 {
		t.Fatalf("only %d variables rendered (%v); everySetting should render them all", len(names), names)
	}
	for _, e := range env {
		if userSet[e.Name] {
			continue
		}
		if _, set := os.LookupEnv(e.Name); set {
			t.Fatalf("%s is set in the test's environment; the test needs it unset", e.Name)
		}
		base := parsedOptions(t)
		// A value from the downward API (e.Value is "") is tried with
		// the probes alone.
		read := slices.ContainsFunc(append([]string{e.Value}, probes...), func(v string) bool {
			t.Setenv(e.Name, v)
			defer os.Unsetenv(e.Name)
			return !reflect.DeepEqual(base, parsedOptions(t))
		})
		if !read {
			t.Errorf("the chart renders %s=%q but no option of the controller reads it", e.Name, e.Value)
		}
	}
}
