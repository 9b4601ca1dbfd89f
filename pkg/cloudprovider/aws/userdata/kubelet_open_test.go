package userdata

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// openKubelet is spec.kubelet with fields karp does not manage, a maxPods
// expression and a registerWithTaints karp must override.
func openKubelet(t *testing.T) *awsv1.KubeletConfiguration {
	t.Helper()
	k := &awsv1.KubeletConfiguration{}
	raw := `{"maxPods":"min(max_pods, 20)","kubeReserved":{"cpu":"200m"},"cpuManagerPolicy":"static",` +
		`"featureGates":{"InPlacePodVerticalScaling":true},"registryPullQPS":10,"allowedUnsafeSysctls":["net.core.somaxconn"]}`
	if err := json.Unmarshal([]byte(raw), k); err != nil {
		t.Fatal(err)
	}
	return k
}

// AL2023 writes every kubelet field into nodeadm's kubelet config, the
// ones karp does not manage included, as upstream does; a maxPods
// expression is written as the instance types' evaluated pods.
func TestAL2023PassesKubeletFieldsThrough(t *testing.T) {
	out, err := Render(awsv1.AMIFamilyAL2023, with(func(o *Options) { o.Kubelet = openKubelet(t) }))
	if err != nil {
		t.Fatal(err)
	}
	parts, err := parseMIME(out)
	if err != nil {
		t.Fatal(err)
	}
	var nodeConfig struct {
		Spec struct {
			Kubelet struct {
				Config map[string]interface{}
			}
		}
	}
	if err := yaml.Unmarshal([]byte(parts[len(parts)-1].content), &nodeConfig); err != nil {
		t.Fatal(err)
	}
	config := nodeConfig.Spec.Kubelet.Config
	want := map[string]interface{}{
		"maxPods":              float64(29),
		"clusterDNS":           []interface{}{"10.100.0.10"},
		"kubeReserved":         map[string]interface{}{"cpu": "200m"},
		"cpuManagerPolicy":     "static",
		"featureGates":         map[string]interface{}{"InPlacePodVerticalScaling": true},
		"registryPullQPS":      float64(10),
		"allowedUnsafeSysctls": []interface{}{"net.core.somaxconn"},
	}
	for key, w := range want {
		if diff := cmp.Diff(w, config[key]); diff != "" {
			t.Errorf("kubelet config %s (-want,+got):\n%s", key, diff)
		}
	}
	taints, _ := config["registerWithTaints"].([]interface{})
	if len(taints) != 2 {
		t.Errorf("registerWithTaints = %v, want the NodeClaim's taint and karp's unregistered taint", config["registerWithTaints"])
	}
}

// Bottlerocket writes only the settings it has (the managed fields);
// the validation controller refuses the others for the family.
func TestBottlerocketWritesManagedKubeletFields(t *testing.T) {
	out, err := Render(awsv1.AMIFamilyBottlerocket, with(func(o *Options) { o.Kubelet = openKubelet(t) }))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Settings struct {
			Kubernetes map[string]interface{} `toml:"kubernetes"`
		} `toml:"settings"`
	}
	if _, err := toml.Decode(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	k := got.Settings.Kubernetes
	if k["max-pods"] != int64(29) {
		t.Errorf("max-pods = %v, want the instance types' 29", k["max-pods"])
	}
	if diff := cmp.Diff(map[string]interface{}{"cpu": "200m"}, k["kube-reserved"]); diff != "" {
		t.Errorf("kube-reserved (-want,+got):\n%s", diff)
	}
	for _, unmanaged := range []string{"cpuManagerPolicy", "cpu-manager-policy", "registryPullQPS", "min(max_pods"} {
		if strings.Contains(out, unmanaged) {
			t.Errorf("user data names %q:\n%s", unmanaged, out)
		}
	}
}
