package userdata

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// bottlerocket renders the user's TOML with karp's settings.kubernetes keys
// written over it; every other key the user set is kept.
func bottlerocket(opts Options) (string, error) {
	settings := map[string]interface{}{}
	if opts.UserData != nil {
		if _, err := toml.Decode(*opts.UserData, &settings); err != nil {
			return "", fmt.Errorf("invalid userData for Bottlerocket, want TOML: %w", err)
		}
	}
	root, err := table(settings, "settings")
	if err != nil {
		return "", err
	}
	kubernetes, err := table(root, "kubernetes")
	if err != nil {
		return "", err
	}
	if err := opts.bottlerocketKubernetes(kubernetes); err != nil {
		return "", err
	}
	if opts.InstanceStorePolicy != nil && *opts.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0 {
		commands, err := table(root, "bootstrap-commands")
		if err != nil {
			return "", err
		}
		commands["000-mount-instance-storage"] = map[string]interface{}{
			"commands":  [][]string{{"apiclient", "ephemeral-storage", "init"}, opts.bindInstanceStorage()},
			"mode":      "always",
			"essential": true,
		}
	}
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(settings); err != nil {
		return "", fmt.Errorf("encoding Bottlerocket settings: %w", err)
	}
	return buf.String(), nil
}

// bottlerocketKubernetes writes karp's keys into settings.kubernetes.
func (o Options) bottlerocketKubernetes(s map[string]interface{}) error {
	k := o.kubelet()
	s["cluster-name"] = o.ClusterName
	s["api-server"] = o.ClusterEndpoint
	if o.CABundle != "" {
		s["cluster-certificate"] = o.CABundle
	}
	labels, err := table(s, "node-labels")
	if err != nil {
		return err
	}
	for key, value := range o.Labels {
		if !kubeletRestricted(key) {
			labels[key] = value
		}
	}
	if len(labels) == 0 {
		delete(s, "node-labels")
	}
	if k.MaxPods != nil {
		s["max-pods"] = int64(*k.MaxPods)
	}
	if len(k.ClusterDNS) != 0 {
		s["cluster-dns-ip"] = k.ClusterDNS[0]
	}
	setMap(s, "system-reserved", k.SystemReserved)
	setMap(s, "kube-reserved", k.KubeReserved)
	setMap(s, "eviction-hard", k.EvictionHard)
	setMap(s, "eviction-soft", k.EvictionSoft)
	if len(k.EvictionSoftGracePeriod) != 0 {
		periods := map[string]string{}
		for signal, d := range k.EvictionSoftGracePeriod {
			periods[signal] = d.Duration.String()
		}
		setMap(s, "eviction-soft-grace-period", periods)
	}
	if k.EvictionMaxPodGracePeriod != nil {
		s["eviction-max-pod-grace-period"] = int64(*k.EvictionMaxPodGracePeriod)
	}
	// Bottlerocket types the image GC thresholds as strings.
	if k.ImageGCHighThresholdPercent != nil {
		s["image-gc-high-threshold-percent"] = strconv.Itoa(int(*k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		s["image-gc-low-threshold-percent"] = strconv.Itoa(int(*k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		s["cpu-cfs-quota-enforced"] = *k.CPUCFSQuota
	}
	s["node-taints"] = bottlerocketTaints(o.taints())
	return nil
}

// bottlerocketTaints groups taints by key as "value:Effect" lists, the
// shape of settings.kubernetes.node-taints.
func bottlerocketTaints(taints []corev1.Taint) map[string][]string {
	out := map[string][]string{}
	for _, t := range taints {
		out[t.Key] = append(out[t.Key], t.Value+":"+string(t.Effect))
	}
	return out
}

// bindInstanceStorage is the apiclient command that mounts the RAID0
// array; Bottlerocket before 1.46.0 needs the directories named.
func (o Options) bindInstanceStorage() []string {
	bind := []string{"apiclient", "ephemeral-storage", "bind"}
	if bottlerocketBefore(o.BottlerocketVersion, 1, 46) {
		bind = append(bind, "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods")
	}
	return bind
}

// bottlerocketBefore reports whether version (v1.20.3, 1.20.3) is older
// than major.minor. Unknown and "latest" versions are current.
func bottlerocketBefore(version string, major, minor int) bool {
	fields := strings.Split(strings.TrimPrefix(version, "v"), ".")
	if len(fields) < 2 {
		return false
	}
	gotMajor, err1 := strconv.Atoi(fields[0])
	gotMinor, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return gotMajor < major || (gotMajor == major && gotMinor < minor)
}

// table returns the TOML table under key, creating it when missing.
func table(parent map[string]interface{}, key string) (map[string]interface{}, error) {
	switch v := parent[key].(type) {
	case nil:
		t := map[string]interface{}{}
		parent[key] = t
		return t, nil
	case map[string]interface{}:
		return v, nil
	default:
		return nil, fmt.Errorf("invalid userData for Bottlerocket: %s is a %T, want a table", key, v)
	}
}

// setMap writes a non-empty string map under key, replacing the user's.
func setMap(s map[string]interface{}, key string, m map[string]string) {
	if len(m) != 0 {
		s[key] = m
	}
}
