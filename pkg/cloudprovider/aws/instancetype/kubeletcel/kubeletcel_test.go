package kubeletcel_test

import (
	"strings"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instancetype/kubeletcel"
)

func TestMaxPods(t *testing.T) {
	env, err := kubeletcel.New()
	if err != nil {
		t.Fatal(err)
	}
	m5 := kubeletcel.Vars{VCPUs: 2, MemoryMiB: 8192, DefaultENIs: 3, IPsPerENI: 10, MaxPods: 29, InstanceType: "m5.large"}
	tests := map[string]struct {
		expr    string
		want    int32
		wantErr string
	}{
		"constant":                  {expr: "42", want: 42},
		"default pods":              {expr: "max_pods", want: 29},
		"capped default":            {expr: "min(max_pods, 20)", want: 20},
		"floor":                     {expr: "max(max_pods, 110)", want: 110},
		"eni formula":               {expr: "default_enis * (ips_per_eni - 1) + 2", want: 29},
		"per vcpu":                  {expr: "vcpus * 8", want: 16},
		"from memory as a double":   {expr: "double(memory_mib) / 1024.0 * 1.5", want: 12},
		"mixed min":                 {expr: "min(max_pods, 12.5)", want: 12},
		"by instance type":          {expr: "instance_type.startsWith('m5.') ? 50 : 110", want: 50},
		"negative":                  {expr: "max_pods - 100", wantErr: "outside [0,"},
		"string result":             {expr: "instance_type", wantErr: "must return int or double"},
		"unknown variable":          {expr: "pods_per_core * 2", wantErr: "compiling expression"},
		"division by zero (double)": {expr: "1.0 / 0.0", wantErr: "returned +Inf"},
		"division by zero (int)":    {expr: "max_pods / (vcpus - 2)", wantErr: "evaluating expression"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := env.MaxPods(tc.expr, m5)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("MaxPods(%q) = %d, %v; want an error containing %q", tc.expr, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("MaxPods(%q) = %d, %v; want %d", tc.expr, got, err, tc.want)
			}
		})
	}
	if err := env.Compile("vcpus +"); err == nil {
		t.Error("a syntax error compiles")
	}
	if err := env.Compile("min(vcpus, max_pods)"); err != nil {
		t.Errorf("Compile: %v", err)
	}
}
