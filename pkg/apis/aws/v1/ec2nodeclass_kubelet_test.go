package v1_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// The open map decodes into the typed fields karp acts on, keeps every
// other field verbatim, and encodes back to the same JSON.
func TestKubeletJSONRoundTrip(t *testing.T) {
	tests := map[string]struct {
		in   string
		want awsv1.KubeletConfiguration
	}{
		"typed only": {
			in:   `{"maxPods":110,"evictionSoft":{"memory.available":"5%"},"evictionSoftGracePeriod":{"memory.available":"1m30s"}}`,
			want: awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110), EvictionSoft: map[string]string{"memory.available": "5%"}, EvictionSoftGracePeriod: map[string]metav1.Duration{"memory.available": {Duration: 90e9}}},
		},
		"passthrough fields": {
			in: `{"cpuManagerPolicy":"static","featureGates":{"A":true},"podsPerCore":2}`,
			want: awsv1.KubeletConfiguration{PodsPerCore: ptr.To[int32](2), Extra: awsv1.KubeletExtra{
				"cpuManagerPolicy": {Raw: []byte(`"static"`)},
				"featureGates":     {Raw: []byte(`{"A":true}`)},
			}},
		},
		"maxPods expression": {
			in:   `{"maxPods":"min(max_pods, 110)"}`,
			want: awsv1.KubeletConfiguration{MaxPodsExpression: ptr.To("min(max_pods, 110)")},
		},
		// A managed field of the wrong type is kept, not dropped, and not
		// a decode error: Validate reports it.
		"wrong type kept": {
			in:   `{"clusterDNS":"10.0.0.10","cpuCFSQuota":true}`,
			want: awsv1.KubeletConfiguration{CPUCFSQuota: ptr.To(true), Extra: awsv1.KubeletExtra{"clusterDNS": {Raw: []byte(`"10.0.0.10"`)}}},
		},
		// Only exact names are managed (encoding/json would fold case).
		"case-folded name is not managed": {
			in:   `{"MaxPods":3}`,
			want: awsv1.KubeletConfiguration{Extra: awsv1.KubeletExtra{"MaxPods": {Raw: []byte(`3`)}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got awsv1.KubeletConfiguration
			if err := json.Unmarshal([]byte(tc.in), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decoded (-want,+got):\n%s", diff)
			}
			out, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(canonicalJSON(t, tc.in), canonicalJSON(t, string(out))); diff != "" {
				t.Errorf("re-encoded (-want,+got):\n%s", diff)
			}
		})
	}
}

// The unstructured converter (used by clients and caches) goes through
// the same JSON methods.
func TestKubeletUnstructuredRoundTrip(t *testing.T) {
	nc := validNodeClass()
	nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPodsExpression: ptr.To("max_pods - 2"), ClusterDNS: []string{"10.0.0.10"},
		Extra: awsv1.KubeletExtra{"registryPullQPS": {Raw: []byte(`5`)}}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(nc)
	if err != nil {
		t.Fatal(err)
	}
	wantSpec := map[string]interface{}{"maxPods": "max_pods - 2", "clusterDNS": []interface{}{"10.0.0.10"}, "registryPullQPS": int64(5)}
	if diff := cmp.Diff(wantSpec, u["spec"].(map[string]interface{})["kubelet"]); diff != "" {
		t.Errorf("unstructured kubelet (-want,+got):\n%s", diff)
	}
	back := &awsv1.EC2NodeClass{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(nc.Spec.Kubelet, back.Spec.Kubelet); diff != "" {
		t.Errorf("decoded (-want,+got):\n%s", diff)
	}
}

func canonicalJSON(t *testing.T, s string) interface{} {
	t.Helper()
	var v interface{}
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func kubeletFrom(t *testing.T, s string) *awsv1.KubeletConfiguration {
	t.Helper()
	k := &awsv1.KubeletConfiguration{}
	if err := json.Unmarshal([]byte(s), k); err != nil {
		t.Fatal(err)
	}
	return k
}

// ValidateKubelet refuses what upstream's controller refuses, with its
// reasons; the API server no longer does.
func TestValidateKubelet(t *testing.T) {
	tests := map[string]struct {
		kubelet    string
		family     string
		expression bool
		wantReason string
		want       []string
	}{
		"valid":                          {kubelet: `{"maxPods":110,"kubeReserved":{"cpu":"100m"},"evictionHard":{"memory.available":"5%"},"imageGCHighThresholdPercent":85,"imageGCLowThresholdPercent":80}`},
		"passthrough on AL2023":          {kubelet: `{"cpuManagerPolicy":"static","registryPullQPS":10}`},
		"passthrough on Custom":          {kubelet: `{"cpuManagerPolicy":"static"}`, family: awsv1.AMIFamilyCustom},
		"passthrough on Bottlerocket":    {kubelet: `{"cpuManagerPolicy":"static","registryPullQPS":10}`, family: awsv1.AMIFamilyBottlerocket, wantReason: awsv1.ConditionReasonUnsupportedKubelet, want: []string{"not applied by the Bottlerocket AMI family that would be silently dropped: cpuManagerPolicy, registryPullQPS"}},
		"passthrough on AL2":             {kubelet: `{"cpuManagerPolicy":"static"}`, family: awsv1.AMIFamilyAL2, wantReason: awsv1.ConditionReasonUnsupportedKubelet, want: []string{"AL2 AMI family", "cpuManagerPolicy"}},
		"podsPerCore on Bottlerocket":    {kubelet: `{"podsPerCore":4}`, family: awsv1.AMIFamilyBottlerocket, wantReason: awsv1.ConditionReasonUnsupportedKubelet, want: []string{"dropped: podsPerCore"}},
		"two cluster DNS on AL2":         {kubelet: `{"clusterDNS":["10.0.0.10","10.0.0.11"]}`, family: awsv1.AMIFamilyAL2, wantReason: awsv1.ConditionReasonUnsupportedKubelet, want: []string{"spec.kubelet.clusterDNS: the AL2 AMI family doesn't accept multiple entries"}},
		"two cluster DNS on AL2023":      {kubelet: `{"clusterDNS":["10.0.0.10","10.0.0.11"]}`},
		"expression with the gate":       {kubelet: `{"maxPods":"max_pods"}`, expression: true},
		"expression without the gate":    {kubelet: `{"maxPods":"max_pods"}`, wantReason: awsv1.ConditionReasonKubeletExpressionsDisabled, want: []string{"NodeClassCEL feature gate is disabled"}},
		"maxPods negative":               {kubelet: `{"maxPods":-1}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.maxPods: -1 can't be negative"}},
		"maxPods a float":                {kubelet: `{"maxPods":1.5}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.maxPods: 1.5 is not of the field's type"}},
		"podsPerCore negative":           {kubelet: `{"podsPerCore":-1}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.podsPerCore: -1 can't be negative"}},
		"clusterDNS a string":            {kubelet: `{"clusterDNS":"10.0.0.10"}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.clusterDNS"}},
		"systemReserved bad key":         {kubelet: `{"systemReserved":{"gpu":"1"}}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{`spec.kubelet.systemReserved: "gpu" isn't a reservable resource`}},
		"kubeReserved negative":          {kubelet: `{"kubeReserved":{"memory":"-1Gi"}}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.kubeReserved[memory]", "can't be a negative resource quantity"}},
		"kubeReserved not a quantity":    {kubelet: `{"kubeReserved":{"cpu":"one core"}}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.kubeReserved[cpu]", "not a resource quantity"}},
		"evictionHard bad signal":        {kubelet: `{"evictionHard":{"memory":"5%"}}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{`spec.kubelet.evictionHard: "memory" isn't a valid eviction signal`}},
		"evictionHard above 100%":        {kubelet: `{"evictionHard":{"nodefs.available":"101%"}}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"must be a percentage or a resource quantity"}},
		"evictionSoft not a threshold":   {kubelet: `{"evictionSoft":{"memory.available":"1 GB"},"evictionSoftGracePeriod":{"memory.available":"1m"}}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.evictionSoft[memory.available]"}},
		"evictionSoft without grace":     {kubelet: `{"evictionSoft":{"memory.available":"5%"}}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.evictionSoft[memory.available]: has no matching evictionSoftGracePeriod"}},
		"grace without evictionSoft":     {kubelet: `{"evictionSoftGracePeriod":{"memory.available":"1m"}}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.evictionSoftGracePeriod[memory.available]: has no matching evictionSoft"}},
		"grace period not a duration":    {kubelet: `{"evictionSoft":{"memory.available":"5%"},"evictionSoftGracePeriod":{"memory.available":"1 minute"}}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.evictionSoftGracePeriod"}},
		"imageGC high below low":         {kubelet: `{"imageGCHighThresholdPercent":50,"imageGCLowThresholdPercent":60}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"imageGCHighThresholdPercent (50) must be greater than imageGCLowThresholdPercent (60)"}},
		"imageGC high above 100":         {kubelet: `{"imageGCHighThresholdPercent":101}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.imageGCHighThresholdPercent: 101 must be between 0 and 100"}},
		"unknown field":                  {kubelet: `{"maxPodz":10}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{`spec.kubelet: unknown field "maxPodz"`}},
		"passthrough of the wrong kind":  {kubelet: `{"cpuManagerPolicy":1}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.cpuManagerPolicy: 1 is not of kind string"}},
		"passthrough integer a float":    {kubelet: `{"registryPullQPS":1.5}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.registryPullQPS: 1.5 is not of kind integer"}},
		"passthrough duration":           {kubelet: `{"imageMinimumGCAge":"2m","shutdownGracePeriod":"30s","kind":"KubeletConfiguration"}`},
		"passthrough bad duration":       {kubelet: `{"imageMinimumGCAge":"two minutes"}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.imageMinimumGCAge"}},
		"passthrough object and null":    {kubelet: `{"featureGates":{"A":true},"logging":null}`},
		"registerWithTaints is karp's":   {kubelet: `{"registerWithTaints":[]}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"spec.kubelet.registerWithTaints: can't be set"}},
		"invalid before family support":  {kubelet: `{"maxPods":-1,"cpuManagerPolicy":"static"}`, family: awsv1.AMIFamilyBottlerocket, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"maxPods"}},
		"invalid before gate is checked": {kubelet: `{"maxPods":"max_pods","podsPerCore":-2}`, wantReason: awsv1.ConditionReasonInvalidKubeletConfig, want: []string{"podsPerCore"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nc := validNodeClass()
			if tc.family != "" {
				nc.Spec.AMIFamily = ptr.To(tc.family)
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-1"}}
			}
			nc.Spec.Kubelet = kubeletFrom(t, tc.kubelet)
			reason, errs := nc.ValidateKubelet(tc.expression)
			if reason != tc.wantReason {
				t.Errorf("reason %q, want %q (errors %v)", reason, tc.wantReason, errs)
			}
			if (len(errs) == 0) != (len(tc.want) == 0) {
				t.Fatalf("errors %v, want ones containing %q", errs, tc.want)
			}
			var msgs []string
			for _, err := range errs {
				msgs = append(msgs, err.Error())
			}
			joined := strings.Join(msgs, "\n")
			for _, w := range tc.want {
				if !strings.Contains(joined, w) {
					t.Errorf("errors %q do not contain %q", joined, w)
				}
			}
		})
	}
	if reason, errs := validNodeClass().ValidateKubelet(false); reason != "" || errs != nil {
		t.Errorf("no kubelet: %q %v", reason, errs)
	}
}

func TestKubeletUnmanagedFields(t *testing.T) {
	k := kubeletFrom(t, `{"maxPods":"x","clusterDNS":"bad","cpuManagerPolicy":"static","allowedUnsafeSysctls":["net.*"]}`)
	if diff := cmp.Diff([]string{"allowedUnsafeSysctls", "cpuManagerPolicy"}, k.UnmanagedFields()); diff != "" {
		t.Errorf("UnmanagedFields (-want,+got):\n%s", diff)
	}
	for name, want := range map[string]bool{"maxPods": true, "evictionSoftGracePeriod": true, "cpuCFSQuota": true, "cpuManagerPolicy": false, "MaxPods": false} {
		if got := awsv1.ManagedKubeletField(name); got != want {
			t.Errorf("ManagedKubeletField(%q) = %v, want %v", name, got, want)
		}
	}
	if !k.HasExpressions() {
		t.Error("a string maxPods is an expression")
	}
}
