package v1

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KubeletConfiguration is spec.kubelet. On the wire it is upstream's open
// map of kubelet configuration fields (k8s.io/kubelet/config/v1beta1
// names); in Go the fields karp acts on are typed, and everything else is
// kept verbatim in Extra, so a class round-trips unchanged.
//
// The typed fields keep the names and types of karp's earlier typed
// struct: the drift hash of a class that sets only them is what it was
// (see EC2NodeClass.Hash).
//
// Decoding never fails on a field's value: a managed field whose value is
// not of its type is kept in Extra, where Validate reports it, so an
// invalid class stays readable (the API server no longer checks inside
// spec.kubelet, as upstream's does not).
type KubeletConfiguration struct {
	// ClusterDNS are the cluster DNS server IPs. Unset, kube-dns's
	// ClusterIP is used.
	ClusterDNS []string `json:"clusterDNS,omitempty"`
	// MaxPods overrides the pod density computed from the instance type's
	// network interfaces.
	MaxPods *int32 `json:"maxPods,omitempty"`
	// MaxPodsExpression is maxPods written as a CEL expression (a string
	// in the manifest), evaluated per instance type when the NodeClassCEL
	// AWS feature gate is on (see the celexpr package).
	MaxPodsExpression *string `json:"-"`
	// PodsPerCore caps pods at this many per vCPU (never above maxPods).
	PodsPerCore *int32 `json:"podsPerCore,omitempty"`
	// SystemReserved are resources kept for OS daemons.
	SystemReserved map[string]string `json:"systemReserved,omitempty"`
	// KubeReserved are resources kept for Kubernetes daemons; each key
	// replaces karp's computed default for it.
	KubeReserved map[string]string `json:"kubeReserved,omitempty"`
	// EvictionHard maps eviction signals to hard thresholds.
	EvictionHard map[string]string `json:"evictionHard,omitempty"`
	// EvictionSoft maps eviction signals to soft thresholds; each needs a
	// grace period in evictionSoftGracePeriod.
	EvictionSoft map[string]string `json:"evictionSoft,omitempty"`
	// EvictionSoftGracePeriod maps eviction signals to how long a soft
	// threshold must hold before pods are evicted.
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	// EvictionMaxPodGracePeriod is the longest grace period (seconds) given
	// to pods evicted for a soft threshold.
	EvictionMaxPodGracePeriod *int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// ImageGCHighThresholdPercent is the disk usage above which image
	// garbage collection always runs; greater than the low threshold.
	ImageGCHighThresholdPercent *int32 `json:"imageGCHighThresholdPercent,omitempty"`
	// ImageGCLowThresholdPercent is the disk usage image garbage collection
	// frees down to.
	ImageGCLowThresholdPercent *int32 `json:"imageGCLowThresholdPercent,omitempty"`
	// CPUCFSQuota enforces CPU limits with CFS quota.
	CPUCFSQuota *bool `json:"cpuCFSQuota,omitempty"`
	// Extra are the other kubelet configuration fields, verbatim: AL2023
	// passes them to nodeadm's kubelet config; other families cannot
	// apply them (Validate says so). A managed field lands here only when
	// its value is not of its type.
	Extra KubeletExtra `json:"-" hash:"string"`
}

// KubeletExtra are kubelet configuration fields by name, as raw JSON.
type KubeletExtra map[string]apiextensionsv1.JSON

// String is the fields as JSON with sorted keys: the drift hash hashes it
// rather than the raw bytes, which hashing as sets would confuse.
func (e KubeletExtra) String() string {
	raw, err := json.Marshal(map[string]apiextensionsv1.JSON(e))
	if err != nil {
		// apiextensionsv1.JSON marshals its raw bytes; it cannot fail.
		return fmt.Sprintf("%v", map[string]apiextensionsv1.JSON(e))
	}
	return string(raw)
}

// kubeletTyped is KubeletConfiguration without its JSON methods, for the
// default encoding of the typed fields.
type kubeletTyped KubeletConfiguration

// managedKubeletFields are the JSON names of the typed fields.
var managedKubeletFields = func() map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeFor[kubeletTyped]()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}()

// ManagedKubeletField reports whether karp reads the kubelet field itself
// (sizing nodes, rendering every family's user data) rather than only
// passing it through to AL2023's nodeadm.
func ManagedKubeletField(name string) bool { return managedKubeletFields[name] }

// UnmarshalJSON reads the open map: managed fields of the right type into
// the typed fields, a string maxPods into MaxPodsExpression, everything
// else into Extra.
func (in *KubeletConfiguration) UnmarshalJSON(data []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return fmt.Errorf("decoding kubelet configuration: %w", err)
	}
	out := KubeletConfiguration{}
	for name, raw := range fields {
		if name == "maxPods" {
			var expr string
			if json.Unmarshal(raw, &expr) == nil {
				out.MaxPodsExpression = &expr
				continue
			}
		}
		if managedKubeletFields[name] && decodeKubeletField(name, raw, &out) {
			continue
		}
		if out.Extra == nil {
			out.Extra = KubeletExtra{}
		}
		out.Extra[name] = apiextensionsv1.JSON{Raw: append([]byte(nil), raw...)}
	}
	*in = out
	return nil
}

// decodeKubeletField decodes one managed field into out, reporting false
// (and leaving out unchanged) when its value is not of the field's type.
func decodeKubeletField(name string, raw json.RawMessage, out *KubeletConfiguration) bool {
	one, err := json.Marshal(map[string]json.RawMessage{name: raw})
	if err != nil {
		return false
	}
	// A failed decode can leave part of a map behind: probe first.
	var probe kubeletTyped
	if json.Unmarshal(one, &probe) != nil {
		return false
	}
	return json.Unmarshal(one, (*kubeletTyped)(out)) == nil
}

// MarshalJSON writes the open map: Extra, then the typed fields over it.
func (in KubeletConfiguration) MarshalJSON() ([]byte, error) {
	fields := map[string]json.RawMessage{}
	for name, v := range in.Extra {
		raw := v.Raw
		if len(raw) == 0 {
			raw = []byte("null")
		}
		fields[name] = raw
	}
	typed, err := json.Marshal(kubeletTyped(in))
	if err != nil {
		return nil, err
	}
	var typedFields map[string]json.RawMessage
	if err := json.Unmarshal(typed, &typedFields); err != nil {
		return nil, err
	}
	for name, raw := range typedFields {
		fields[name] = raw
	}
	if in.MaxPods == nil && in.MaxPodsExpression != nil {
		raw, err := json.Marshal(*in.MaxPodsExpression)
		if err != nil {
			return nil, err
		}
		fields["maxPods"] = raw
	}
	return json.Marshal(fields)
}

// UnmanagedFields are the names in Extra karp does not read, sorted: the
// fields only AL2023 applies.
func (in *KubeletConfiguration) UnmanagedFields() []string {
	if in == nil {
		return nil
	}
	var out []string
	for name := range in.Extra {
		if !managedKubeletFields[name] {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// HasExpressions reports whether a field holds a CEL expression.
func (in *KubeletConfiguration) HasExpressions() bool {
	return in != nil && in.MaxPodsExpression != nil
}
