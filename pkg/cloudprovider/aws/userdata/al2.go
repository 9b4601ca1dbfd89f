package userdata

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// al2 renders the user's parts followed by a script calling the AMI's
// /etc/eks/bootstrap.sh.
func al2(opts Options) (string, error) {
	parts, err := userParts(opts.UserData, false)
	if err != nil {
		return "", fmt.Errorf("parsing userData: %w", err)
	}
	return serializeMIME(append(parts, part{contentType: contentTypeShellScript, content: opts.bootstrapScript()}))
}

func (o Options) bootstrapScript() string {
	k := o.kubelet()
	var b strings.Builder
	b.WriteString("#!/bin/bash -xe\n")
	b.WriteString("exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n")
	fmt.Fprintf(&b, "/etc/eks/bootstrap.sh '%s' --apiserver-endpoint '%s'", o.ClusterName, o.ClusterEndpoint)
	if o.CABundle != "" {
		fmt.Fprintf(&b, " --b64-cluster-ca '%s'", o.CABundle)
	}
	var flags []string
	if len(k.ClusterDNS) != 0 {
		if ip := net.ParseIP(k.ClusterDNS[0]); ip != nil && ip.To4() == nil {
			flags = append(flags, "--ip-family ipv6")
		}
		flags = append(flags, fmt.Sprintf("--dns-cluster-ip '%s'", k.ClusterDNS[0]))
	}
	if k.MaxPods != nil {
		flags = append(flags, "--use-max-pods false")
	}
	if args := o.kubeletExtraArgs(k); args != "" {
		flags = append(flags, fmt.Sprintf("--kubelet-extra-args '%s'", args))
	}
	if o.InstanceStorePolicy != nil && *o.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0 {
		flags = append(flags, "--local-disks raid0")
	}
	for _, f := range flags {
		b.WriteString(" \\\n" + f)
	}
	b.WriteString("\n")
	return b.String()
}

// kubeletExtraArgs renders labels, taints and kubelet settings as kubelet
// flags (AL2 and Windows), map entries sorted by key.
func (o Options) kubeletExtraArgs(k awsv1.KubeletConfiguration) string {
	var args []string
	if labels := o.nodeLabels(); len(labels) != 0 {
		args = append(args, fmt.Sprintf("--node-labels=%q", strings.Join(labels, ",")))
	}
	if taints := o.taints(); len(taints) != 0 {
		args = append(args, fmt.Sprintf("--register-with-taints=%q", strings.Join(taintStrings(taints), ",")))
	}
	if k.MaxPods != nil {
		args = append(args, fmt.Sprintf("--max-pods=%d", *k.MaxPods))
	}
	if k.PodsPerCore != nil {
		args = append(args, fmt.Sprintf("--pods-per-core=%d", *k.PodsPerCore))
	}
	for _, m := range []struct {
		flag, sep string
		values    map[string]string
	}{
		{"--system-reserved", "=", k.SystemReserved},
		{"--kube-reserved", "=", k.KubeReserved},
		{"--eviction-hard", "<", k.EvictionHard},
		{"--eviction-soft", "<", k.EvictionSoft},
	} {
		if len(m.values) != 0 {
			args = append(args, fmt.Sprintf("%s=%q", m.flag, strings.Join(sortedPairs(m.values, m.sep), ",")))
		}
	}
	if len(k.EvictionSoftGracePeriod) != 0 {
		periods := map[string]string{}
		for signal, d := range k.EvictionSoftGracePeriod {
			periods[signal] = d.Duration.String()
		}
		args = append(args, fmt.Sprintf("--eviction-soft-grace-period=%q", strings.Join(sortedPairs(periods, "="), ",")))
	}
	if k.EvictionMaxPodGracePeriod != nil {
		args = append(args, fmt.Sprintf("--eviction-max-pod-grace-period=%d", *k.EvictionMaxPodGracePeriod))
	}
	if k.ImageGCHighThresholdPercent != nil {
		args = append(args, fmt.Sprintf("--image-gc-high-threshold=%d", *k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		args = append(args, fmt.Sprintf("--image-gc-low-threshold=%d", *k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		args = append(args, fmt.Sprintf("--cpu-cfs-quota=%t", *k.CPUCFSQuota))
	}
	return strings.Join(args, " ")
}

func taintStrings(taints []corev1.Taint) []string {
	out := make([]string, 0, len(taints))
	for _, t := range taints {
		out = append(out, t.ToString())
	}
	return out
}
