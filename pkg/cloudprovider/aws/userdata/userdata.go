package userdata

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Options is what user data is rendered from.
type Options struct {
	// ClusterName is the EKS cluster's name.
	ClusterName string
	// ClusterEndpoint is the API server URL.
	ClusterEndpoint string
	// CABundle is the cluster's base64-encoded CA certificate bundle; empty
	// leaves the node to its AMI's default.
	CABundle string
	// ClusterCIDR is the cluster's service CIDR; nodeadm (AL2023) needs it,
	// so AL2023 user data is not rendered without it.
	ClusterCIDR string
	// ClusterDNSIP is kube-dns's ClusterIP, used as clusterDNS when the
	// kubelet settings name none.
	ClusterDNSIP string
	// MaxPods is the pods capacity of the instance types the user data is
	// for, used when the kubelet settings do not set maxPods, so the
	// kubelet admits exactly what karp scheduled.
	MaxPods *int32
	// Kubelet are the EC2NodeClass's kubelet settings. AL2023 writes
	// every field into nodeadm's kubelet config, those karp does not
	// manage included; the other families write the managed ones.
	Kubelet *awsv1.KubeletConfiguration
	// UserData is the EC2NodeClass's spec.userData.
	UserData *string
	// Labels the node registers with. Labels in the kubernetes.io and
	// k8s.io domains are dropped: the kubelet may not set them, and karp
	// syncs them onto the Node after registration.
	Labels map[string]string
	// Taints the node registers with (the NodeClaim's taints and startup
	// taints); karpenter.sh/unregistered:NoExecute is added when missing.
	Taints []corev1.Taint
	// InstanceStorePolicy RAID0 makes the node format its NVMe instance
	// store as one array for containerd and kubelet state.
	InstanceStorePolicy *awsv1.InstanceStorePolicy
	// BottlerocketVersion is the Bottlerocket release of the AMI (e.g.
	// v1.20.3); empty or "latest" counts as a current release.
	BottlerocketVersion string
}

// MaxSize is the largest user data EC2 accepts, in bytes before base64.
const MaxSize = 16 * 1024

// Render returns the user data for an instance of the given AMI family. It
// fails when the result exceeds MaxSize: EC2 would refuse the launch
// template (upstream reports it as UserDataSizeLimitExceeded).
func Render(family string, opts Options) (string, error) {
	out, err := render(family, opts)
	if err != nil {
		return "", err
	}
	if len(out) > MaxSize {
		return "", fmt.Errorf("rendering user data: %d bytes exceed EC2's limit of %d; shorten spec.userData", len(out), MaxSize)
	}
	return out, nil
}

func render(family string, opts Options) (string, error) {
	switch family {
	case awsv1.AMIFamilyAL2023:
		return al2023(opts)
	case awsv1.AMIFamilyBottlerocket:
		return bottlerocket(opts)
	case awsv1.AMIFamilyAL2:
		return al2(opts)
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		return windows(opts), nil
	case awsv1.AMIFamilyCustom:
		if opts.UserData == nil {
			return "", nil
		}
		return *opts.UserData, nil
	default:
		return "", fmt.Errorf("rendering user data: unknown AMI family %q", family)
	}
}

// kubelet returns the kubelet settings with karp's defaults filled in:
// clusterDNS from kube-dns and maxPods from the instance types. A maxPods
// CEL expression is never written: the instance types' pods capacity is
// its value for them (evaluated per type, or the family's default with
// the NodeClassCEL gate off).
func (o Options) kubelet() awsv1.KubeletConfiguration {
	k := awsv1.KubeletConfiguration{}
	if o.Kubelet != nil {
		k = *o.Kubelet.DeepCopy()
	}
	k.MaxPodsExpression = nil
	if len(k.ClusterDNS) == 0 && o.ClusterDNSIP != "" {
		k.ClusterDNS = []string{o.ClusterDNSIP}
	}
	if k.MaxPods == nil && o.MaxPods != nil {
		k.MaxPods = o.MaxPods
	}
	return k
}

// nodeLabels returns the labels the kubelet may register with, sorted.
func (o Options) nodeLabels() []string {
	var out []string
	for k, v := range o.Labels {
		if kubeletRestricted(k) {
			continue
		}
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// kubeletRestricted reports whether the label's domain is kubernetes.io or
// k8s.io (or a subdomain), which the NodeRestriction admission plugin
// reserves.
func kubeletRestricted(key string) bool {
	domain := karpv1.GetLabelDomain(key)
	for _, restricted := range []string{"kubernetes.io", "k8s.io"} {
		if domain == restricted || strings.HasSuffix(domain, "."+restricted) {
			return true
		}
	}
	return false
}

// taints returns the registration taints with the unregistered taint.
func (o Options) taints() []corev1.Taint {
	out := append([]corev1.Taint(nil), o.Taints...)
	for _, t := range out {
		if t.MatchTaint(&karpv1.UnregisteredNoExecuteTaint) {
			return out
		}
	}
	return append(out, karpv1.UnregisteredNoExecuteTaint)
}

// sortedPairs renders a map as k<sep>v entries sorted by key.
func sortedPairs(m map[string]string, sep string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+sep+v)
	}
	sort.Strings(out)
	return out
}
