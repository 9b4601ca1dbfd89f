package options_test

import (
	"strings"
	"testing"
)

// TestInertSettingsAreNamed: settings karp accepts, for upstream's chart
// and environment to work unchanged, but that change nothing yet are named
// (for the warning at start) when set away from upstream's default.
func TestInertSettingsAreNamed(t *testing.T) {
	tests := map[string]struct {
		args []string
		want []string // substrings, one per inert setting, in order
	}{
		"defaults": {},
		"settings that work": {args: []string{"--feature-gates=NodeRepair=true,SpotToSpotConsolidation=true,StaticCapacity=true,NodeOverlay=true,CapacityBuffer=true,ProvisioningRequest=true",
			"--batch-idle-duration=2s"}},
		"cpu requests":            {args: []string{"--cpu-requests=2000"}, want: []string{"--cpu-requests"}},
		"DRA requests honored":    {args: []string{"--ignore-dra-requests=false"}, want: []string{"--ignore-dra-requests=false"}},
		"AWS settings under kwok": {args: []string{"--enable-zonal-shift=true", "--eks-control-plane=true"}},
		// Zonal shift, launch dry runs and the EKS control plane's version
		// lookup all act under aws.
		"AWS settings under aws": {
			args: []string{"--cloud-provider=aws", "--cluster-name=test", "--enable-zonal-shift=true", "--disable-dry-run=true", "--eks-control-plane=true"},
		},
		"AWS defaults under aws": {
			args: []string{"--cloud-provider=aws", "--cluster-name=test"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			got := o.Inert()
			if len(got) != len(tc.want) {
				t.Fatalf("Inert() = %v, want %d entries naming %v", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("Inert()[%d] = %q, want it to name %q", i, got[i], w)
				}
			}
		})
	}
}
