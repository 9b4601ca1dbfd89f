package userdata

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

// nodeConfigHeader opens the generated NodeConfig. It keeps upstream
// Karpenter's wording so tooling that looks for it on nodes still finds it.
const nodeConfigHeader = "# Karpenter Generated NodeConfig\n"

// al2023 renders the user's parts followed by karp's nodeadm NodeConfig.
func al2023(opts Options) (string, error) {
	nodeConfig, err := opts.nodeConfig()
	if err != nil {
		return "", fmt.Errorf("rendering NodeConfig: %w", err)
	}
	parts, err := userParts(opts.UserData, true)
	if err != nil {
		return "", fmt.Errorf("parsing userData: %w", err)
	}
	return serializeMIME(append(parts, part{contentType: contentTypeNodeConfig, content: nodeConfig}))
}

// nodeConfig returns the node.eks.aws/v1alpha1 NodeConfig as YAML.
func (o Options) nodeConfig() (string, error) {
	// nodeadm refuses a NodeConfig without the service CIDR, and the
	// instance would never join: fail the launch instead.
	if o.ClusterCIDR == "" {
		return "", errors.New("the cluster's service CIDR is unknown; nodeadm (AL2023) requires it")
	}
	cluster := map[string]interface{}{
		"name":              o.ClusterName,
		"apiServerEndpoint": o.ClusterEndpoint,
		"cidr":              o.ClusterCIDR,
	}
	if o.CABundle != "" {
		// nodeadm holds the CA as bytes; YAML writes them base64. Decoding
		// first rejects a malformed bundle here rather than on the node.
		ca, err := base64.StdEncoding.DecodeString(o.CABundle)
		if err != nil {
			return "", fmt.Errorf("decoding the CA bundle: %w", err)
		}
		cluster["certificateAuthority"] = base64.StdEncoding.EncodeToString(ca)
	}
	config, err := o.kubeletConfigMap()
	if err != nil {
		return "", err
	}
	kubelet := map[string]interface{}{"config": config}
	if labels := o.nodeLabels(); len(labels) != 0 {
		kubelet["flags"] = []string{fmt.Sprintf("--node-labels=%q", strings.Join(labels, ","))}
	}
	spec := map[string]interface{}{"cluster": cluster, "kubelet": kubelet}
	if o.InstanceStorePolicy != nil && *o.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0 {
		spec["instance"] = map[string]interface{}{"localStorage": map[string]interface{}{"strategy": "RAID0"}}
	}
	out, err := yaml.Marshal(map[string]interface{}{
		"apiVersion": "node.eks.aws/v1alpha1",
		"kind":       "NodeConfig",
		"spec":       spec,
	})
	if err != nil {
		return "", err
	}
	return nodeConfigHeader + string(out), nil
}

// kubeletConfigMap is the kubelet settings as kubelet configuration fields
// (the EC2NodeClass uses the kubelet's own names), with registerWithTaints.
func (o Options) kubeletConfigMap() (map[string]interface{}, error) {
	raw, err := json.Marshal(o.kubelet())
	if err != nil {
		return nil, fmt.Errorf("encoding kubelet settings: %w", err)
	}
	config := map[string]interface{}{}
	if err := json.Unmarshal(raw, &config); err != nil {
		return nil, fmt.Errorf("decoding kubelet settings: %w", err)
	}
	taints, err := json.Marshal(o.taints())
	if err != nil {
		return nil, fmt.Errorf("encoding taints: %w", err)
	}
	var registerWithTaints []interface{}
	if err := json.Unmarshal(taints, &registerWithTaints); err != nil {
		return nil, fmt.Errorf("decoding taints: %w", err)
	}
	config["registerWithTaints"] = registerWithTaints
	return config, nil
}
