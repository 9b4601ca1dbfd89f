package v1

import "testing"

// Every field karp manages is a kubelet field of the kind karp decodes it
// as, so the list and the typed fields agree.
func TestManagedFieldsAreKubeletFields(t *testing.T) {
	want := map[string]string{
		"clusterDNS": "array", "maxPods": "integer", "podsPerCore": "integer", "systemReserved": "object",
		"kubeReserved": "object", "evictionHard": "object", "evictionSoft": "object", "evictionSoftGracePeriod": "object",
		"evictionMaxPodGracePeriod": "integer", "imageGCHighThresholdPercent": "integer", "imageGCLowThresholdPercent": "integer",
		"cpuCFSQuota": "boolean",
	}
	if len(managedKubeletFields) != len(want) {
		t.Errorf("managed fields %v, want %v", managedKubeletFields, want)
	}
	for name, kind := range want {
		if !managedKubeletFields[name] {
			t.Errorf("%s is not managed", name)
		}
		if kubeletFields[name] != kind {
			t.Errorf("kubeletfields.txt: %s is %q, want %q", name, kubeletFields[name], kind)
		}
	}
	if len(kubeletFields) < 100 {
		t.Errorf("kubeletfields.txt lists %d fields; the kubelet has over 120", len(kubeletFields))
	}
}
