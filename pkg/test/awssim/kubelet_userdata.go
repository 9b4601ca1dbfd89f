package awssim

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// bootConfig is what a node's boot reads from its user data: the labels
// and taints the kubelet registers with and the kubelet settings that size
// its allocatable.
type bootConfig struct {
	labels         map[string]string
	taints         []corev1.Taint
	maxPods        *int64
	kubeReserved   map[string]string
	systemReserved map[string]string
	evictionHard   map[string]string
	// bottlerocket sizes kube-reserved from max pods, and keeps the
	// kubelet's state on its data volume (/dev/xvdb), not the root one.
	bottlerocket bool
}

// parseUserData reads base64 user data as the EKS-optimized AMIs do:
// Bottlerocket's TOML settings, AL2023's nodeadm NodeConfig in a MIME
// archive, or AL2's bootstrap.sh kubelet flags. User data none of them
// understands is an error: such an instance never joins.
func parseUserData(encoded string) (bootConfig, error) {
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return bootConfig{}, fmt.Errorf("user data is not base64: %w", err)
	}
	text := string(raw)
	if strings.TrimSpace(text) == "" {
		return bootConfig{}, errors.New("no user data: the node would not know its cluster")
	}
	trimmed := strings.TrimSpace(text)
	if !strings.HasPrefix(trimmed, "MIME-Version:") && !strings.HasPrefix(trimmed, "Content-Type:") {
		return parseBottlerocket(text)
	}
	parts, err := mimeParts(text)
	if err != nil {
		return bootConfig{}, err
	}
	for _, p := range parts {
		if strings.HasPrefix(p.contentType, "application/node.eks.aws") {
			if cfg, ok, err := parseNodeConfig(p.content); err != nil || ok {
				return cfg, err
			}
		}
	}
	for _, p := range parts {
		if strings.Contains(p.content, "/etc/eks/bootstrap.sh") {
			return parseBootstrapScript(p.content)
		}
	}
	return bootConfig{}, errors.New("user data has neither a nodeadm NodeConfig nor a bootstrap.sh call")
}

type mimePart struct {
	contentType string
	content     string
}

func mimeParts(text string) ([]mimePart, error) {
	msg, err := mail.ReadMessage(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("reading MIME user data: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("reading the MIME user data's Content-Type: %w", err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		return nil, fmt.Errorf("MIME user data is %s, not multipart", mediaType)
	}
	reader := multipart.NewReader(msg.Body, params["boundary"])
	var out []mimePart
	for {
		p, err := reader.NextPart()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d: %w", len(out)+1, err)
		}
		content, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d: %w", len(out)+1, err)
		}
		out = append(out, mimePart{contentType: p.Header.Get("Content-Type"), content: string(content)})
	}
}

// nodeConfig is the part of nodeadm's NodeConfig the kubelet reads.
type nodeConfig struct {
	Kind string `json:"kind"`
	Spec struct {
		Kubelet struct {
			Config struct {
				MaxPods            *int64            `json:"maxPods"`
				KubeReserved       map[string]string `json:"kubeReserved"`
				SystemReserved     map[string]string `json:"systemReserved"`
				EvictionHard       map[string]string `json:"evictionHard"`
				RegisterWithTaints []corev1.Taint    `json:"registerWithTaints"`
			} `json:"config"`
			Flags []string `json:"flags"`
		} `json:"kubelet"`
	} `json:"spec"`
}

// parseNodeConfig reads a NodeConfig; ok is false for another document.
func parseNodeConfig(content string) (bootConfig, bool, error) {
	var nc nodeConfig
	if err := yaml.Unmarshal([]byte(content), &nc); err != nil {
		return bootConfig{}, false, fmt.Errorf("parsing the NodeConfig: %w", err)
	}
	if nc.Kind != "NodeConfig" {
		return bootConfig{}, false, nil
	}
	k := nc.Spec.Kubelet
	cfg := bootConfig{
		labels: map[string]string{}, taints: k.Config.RegisterWithTaints, maxPods: k.Config.MaxPods,
		kubeReserved: k.Config.KubeReserved, systemReserved: k.Config.SystemReserved, evictionHard: k.Config.EvictionHard,
	}
	for _, flag := range k.Flags {
		if value, ok := strings.CutPrefix(flag, "--node-labels="); ok {
			labels, err := parsePairs(unquote(value), "=")
			if err != nil {
				return bootConfig{}, false, fmt.Errorf("kubelet flag --node-labels: %w", err)
			}
			cfg.labels = labels
		}
	}
	return cfg, true, nil
}

// bootstrapFlag finds one kubelet flag in bootstrap.sh's --kubelet-extra-args.
var bootstrapFlag = regexp.MustCompile(`--(node-labels|register-with-taints|max-pods|kube-reserved|system-reserved|eviction-hard)=("[^"]*"|\S+)`)

func parseBootstrapScript(script string) (bootConfig, error) {
	cfg := bootConfig{labels: map[string]string{}}
	for _, m := range bootstrapFlag.FindAllStringSubmatch(script, -1) {
		value := strings.TrimSuffix(unquote(m[2]), "'")
		var err error
		switch m[1] {
		case "node-labels":
			cfg.labels, err = parsePairs(value, "=")
		case "register-with-taints":
			cfg.taints, err = parseTaints(value)
		case "max-pods":
			var n int64
			n, err = strconv.ParseInt(value, 10, 64)
			cfg.maxPods = &n
		case "kube-reserved":
			cfg.kubeReserved, err = parsePairs(value, "=")
		case "system-reserved":
			cfg.systemReserved, err = parsePairs(value, "=")
		case "eviction-hard":
			cfg.evictionHard, err = parsePairs(value, "<")
		}
		if err != nil {
			return bootConfig{}, fmt.Errorf("kubelet flag --%s: %w", m[1], err)
		}
	}
	return cfg, nil
}

// bottlerocketSettings is the part of settings.kubernetes the kubelet reads.
type bottlerocketSettings struct {
	Settings struct {
		Kubernetes struct {
			ClusterName    string              `toml:"cluster-name"`
			NodeLabels     map[string]string   `toml:"node-labels"`
			NodeTaints     map[string][]string `toml:"node-taints"`
			MaxPods        *int64              `toml:"max-pods"`
			KubeReserved   map[string]string   `toml:"kube-reserved"`
			SystemReserved map[string]string   `toml:"system-reserved"`
			EvictionHard   map[string]string   `toml:"eviction-hard"`
		} `toml:"kubernetes"`
	} `toml:"settings"`
}

func parseBottlerocket(text string) (bootConfig, error) {
	var s bottlerocketSettings
	if _, err := toml.Decode(text, &s); err != nil {
		return bootConfig{}, fmt.Errorf("user data is neither MIME nor Bottlerocket TOML: %w", err)
	}
	k := s.Settings.Kubernetes
	if k.ClusterName == "" {
		return bootConfig{}, errors.New("the Bottlerocket user data sets no settings.kubernetes.cluster-name")
	}
	cfg := bootConfig{labels: k.NodeLabels, maxPods: k.MaxPods, kubeReserved: k.KubeReserved, systemReserved: k.SystemReserved,
		evictionHard: k.EvictionHard, bottlerocket: true}
	if cfg.labels == nil {
		cfg.labels = map[string]string{}
	}
	for key, values := range k.NodeTaints {
		for _, v := range values {
			value, effect, ok := strings.Cut(v, ":")
			if !ok {
				return bootConfig{}, fmt.Errorf("node-taints %s: %q is not value:Effect", key, v)
			}
			cfg.taints = append(cfg.taints, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)})
		}
	}
	return cfg, nil
}

func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return strings.Trim(s, `"'`)
}

// parsePairs reads "k1=v1,k2=v2" (sep "=") or "k1<v1,..." (sep "<").
func parsePairs(s, sep string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, sep)
		if !ok {
			return nil, fmt.Errorf("%q is not key%svalue", pair, sep)
		}
		out[k] = v
	}
	return out, nil
}

// parseTaints reads "key=value:Effect,key:Effect".
func parseTaints(s string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, spec := range strings.Split(s, ",") {
		keyValue, effect, ok := strings.Cut(spec, ":")
		if !ok {
			return nil, fmt.Errorf("taint %q has no effect", spec)
		}
		key, value, _ := strings.Cut(keyValue, "=")
		out = append(out, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)})
	}
	return out, nil
}
