package options

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	schedulerv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// podTopologySpread is the name of kube-scheduler's topology spread plugin.
const podTopologySpread = "PodTopologySpread"

// SchedulerConfig is what karp mirrors of the cluster's kube-scheduler
// configuration (--scheduler-config).
type SchedulerConfig struct {
	// Spread are the PodTopologySpread default constraints, by the
	// scheduler name of the profile that applies them.
	Spread scheduling.SpreadDefaults
	// Unapplied names the profiles whose defaults karp leaves out (System
	// defaulting), to be said at start.
	Unapplied []string
}

// LoadSchedulerConfig reads --scheduler-config. The value is either the
// document itself, as upstream Karpenter takes it (a YAML or JSON mapping
// in SCHEDULER_CONFIG), or the path of a file holding it. The document is
// upstream Karpenter's own form,
//
//	podTopologySpread:
//	  defaultConstraints: [...]
//
// whose defaults apply to every pod, or a kube-scheduler
// KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), whose
// PodTopologySpread args apply to the pods of their profile. Both are
// decoded strictly and validated as kube-scheduler validates them; the
// error names the file (or the flag) and what is wrong. An empty value
// means no defaults.
func LoadSchedulerConfig(value string) (*SchedulerConfig, error) {
	if strings.TrimSpace(value) == "" {
		return &SchedulerConfig{}, nil
	}
	source, data := "(inline document)", []byte(value)
	var probe any
	_ = yaml.Unmarshal(data, &probe) // a path decodes as a string
	if !isMapping(probe) && !strings.ContainsAny(value, "\n{") {
		// Not a document: a path.
		source = value
		raw, err := os.ReadFile(value)
		if pathErr := (*fs.PathError)(nil); errors.As(err, &pathErr) {
			err = pathErr.Err // the path is named once, below
		}
		if err != nil {
			return nil, fmt.Errorf("--scheduler-config %s: reading the file: %w", value, err)
		}
		data = raw
	}
	cfg, err := decodeSchedulerConfig(data)
	if err != nil {
		return nil, fmt.Errorf("--scheduler-config %s: %w", source, err)
	}
	return cfg, nil
}

func isMapping(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

func decodeSchedulerConfig(data []byte) (*SchedulerConfig, error) {
	var probe map[string]any
	if err := yaml.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	if len(probe) == 0 {
		return nil, errors.New("the document is empty")
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, err
	}
	switch {
	case tm.Kind == "" && tm.APIVersion == "":
		return decodeKarpenterForm(data)
	case tm.Kind != "KubeSchedulerConfiguration":
		return nil, fmt.Errorf("kind %q is not KubeSchedulerConfiguration", tm.Kind)
	case tm.APIVersion != schedulerv1.SchemeGroupVersion.String():
		return nil, fmt.Errorf("apiVersion %q is not supported: karp reads %s", tm.APIVersion, schedulerv1.SchemeGroupVersion)
	}
	return decodeKubeSchedulerConfiguration(data)
}

// karpenterForm is upstream Karpenter's --scheduler-config document.
type karpenterForm struct {
	PodTopologySpread *struct {
		DefaultConstraints []corev1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
	} `json:"podTopologySpread,omitempty"`
}

func decodeKarpenterForm(data []byte) (*SchedulerConfig, error) {
	var doc karpenterForm
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, err
	}
	cfg := &SchedulerConfig{}
	if doc.PodTopologySpread == nil || len(doc.PodTopologySpread.DefaultConstraints) == 0 {
		return cfg, nil
	}
	constraints := doc.PodTopologySpread.DefaultConstraints
	if err := validateDefaultConstraints("podTopologySpread.defaultConstraints", constraints); err != nil {
		return nil, err
	}
	for i, c := range constraints {
		// As upstream Karpenter: matchLabelKeys has no effect on defaults
		// (the deduced selector replaces the selector it would extend).
		if len(c.MatchLabelKeys) > 0 {
			return nil, fmt.Errorf("podTopologySpread.defaultConstraints[%d].matchLabelKeys must not be set: it has no effect on default constraints", i)
		}
	}
	cfg.Spread = scheduling.SpreadDefaults{scheduling.AnyScheduler: constraints}
	return cfg, nil
}

func decodeKubeSchedulerConfiguration(data []byte) (*SchedulerConfig, error) {
	var ksc schedulerv1.KubeSchedulerConfiguration
	if err := yaml.UnmarshalStrict(data, &ksc); err != nil {
		return nil, err
	}
	profiles := ksc.Profiles
	if len(profiles) == 0 {
		// kube-scheduler's default: one default-scheduler profile.
		profiles = []schedulerv1.KubeSchedulerProfile{{}}
	}
	cfg := &SchedulerConfig{Spread: scheduling.SpreadDefaults{}}
	for i := range profiles {
		name := scheduling.DefaultSchedulerName
		if profiles[i].SchedulerName != nil && *profiles[i].SchedulerName != "" {
			name = *profiles[i].SchedulerName
		}
		field := fmt.Sprintf("profiles[%d] (%s)", i, name)
		if _, dup := cfg.Spread[name]; dup {
			return nil, fmt.Errorf("%s: schedulerName %q is used by another profile", field, name)
		}
		args, err := podTopologySpreadArgs(&profiles[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		constraints, err := profileDefaults(field, &profiles[i], args)
		if err != nil {
			return nil, err
		}
		if args.DefaultingType == schedulerv1.SystemDefaulting {
			cfg.Unapplied = append(cfg.Unapplied, name)
		}
		cfg.Spread[name] = constraints
	}
	return cfg, nil
}

// podTopologySpreadArgs decodes the profile's PodTopologySpread args,
// defaulted as kube-scheduler defaults them (System defaulting).
func podTopologySpreadArgs(profile *schedulerv1.KubeSchedulerProfile) (*schedulerv1.PodTopologySpreadArgs, error) {
	args := &schedulerv1.PodTopologySpreadArgs{}
	seen := map[string]bool{}
	for j, pc := range profile.PluginConfig {
		if seen[pc.Name] {
			return nil, fmt.Errorf("pluginConfig[%d]: plugin %s is configured twice", j, pc.Name)
		}
		seen[pc.Name] = true
		if pc.Name != podTopologySpread || len(pc.Args.Raw) == 0 {
			continue
		}
		if err := yaml.UnmarshalStrict(pc.Args.Raw, args); err != nil {
			return nil, fmt.Errorf("pluginConfig[%d] (%s) args: %w", j, podTopologySpread, err)
		}
		if args.Kind != "" && args.Kind != "PodTopologySpreadArgs" {
			return nil, fmt.Errorf("pluginConfig[%d] (%s) args: kind %q is not PodTopologySpreadArgs", j, podTopologySpread, args.Kind)
		}
	}
	if args.DefaultingType == "" {
		args.DefaultingType = schedulerv1.SystemDefaulting
	}
	return args, nil
}

// profileDefaults validates the args as kube-scheduler does and returns
// the constraints karp applies for the profile: none under System
// defaulting (kube-scheduler's built-in zone and hostname defaults are
// ScheduleAnyway, scoring preferences only; upstream Karpenter never
// mirrors them, and karp's Respect policy would first enforce them as
// requirements, launching nodes the scheduler does not need), and only
// those of the plugin's enabled phases (DoNotSchedule ones filter,
// ScheduleAnyway ones score).
func profileDefaults(field string, profile *schedulerv1.KubeSchedulerProfile, args *schedulerv1.PodTopologySpreadArgs) ([]corev1.TopologySpreadConstraint, error) {
	field += " PodTopologySpread args"
	switch args.DefaultingType {
	case schedulerv1.SystemDefaulting:
		if len(args.DefaultConstraints) > 0 {
			return nil, fmt.Errorf("%s: defaultConstraints are set, so defaultingType must be List, not System", field)
		}
		return nil, nil
	case schedulerv1.ListDefaulting:
	default:
		return nil, fmt.Errorf("%s: defaultingType %q is not one of System, List", field, args.DefaultingType)
	}
	if err := validateDefaultConstraints(field+" defaultConstraints", args.DefaultConstraints); err != nil {
		return nil, err
	}
	filters := pluginEnabled(profile.Plugins, func(p *schedulerv1.Plugins) schedulerv1.PluginSet { return p.PreFilter }) &&
		pluginEnabled(profile.Plugins, func(p *schedulerv1.Plugins) schedulerv1.PluginSet { return p.Filter })
	scores := pluginEnabled(profile.Plugins, func(p *schedulerv1.Plugins) schedulerv1.PluginSet { return p.PreScore }) &&
		pluginEnabled(profile.Plugins, func(p *schedulerv1.Plugins) schedulerv1.PluginSet { return p.Score })
	var out []corev1.TopologySpreadConstraint
	for _, c := range args.DefaultConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule && !filters || c.WhenUnsatisfiable == corev1.ScheduleAnyway && !scores {
			continue
		}
		// kube-scheduler replaces the selector matchLabelKeys would
		// extend with the deduced one: it has no effect on defaults.
		c.MatchLabelKeys = nil
		out = append(out, c)
	}
	return out, nil
}

// validateDefaultConstraints mirrors kube-scheduler's validation of
// PodTopologySpreadArgs.defaultConstraints.
func validateDefaultConstraints(field string, constraints []corev1.TopologySpreadConstraint) error {
	for i, c := range constraints {
		at := fmt.Sprintf("%s[%d]", field, i)
		if c.MaxSkew <= 0 {
			return fmt.Errorf("%s.maxSkew %d must be greater than 0", at, c.MaxSkew)
		}
		if c.TopologyKey == "" {
			return fmt.Errorf("%s.topologyKey must be set", at)
		}
		if errs := validation.IsQualifiedName(c.TopologyKey); len(errs) > 0 {
			return fmt.Errorf("%s.topologyKey %q is not a valid label key: %s", at, c.TopologyKey, strings.Join(errs, "; "))
		}
		if c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			return fmt.Errorf("%s.whenUnsatisfiable %q is not one of DoNotSchedule, ScheduleAnyway", at, c.WhenUnsatisfiable)
		}
		if c.LabelSelector != nil {
			return fmt.Errorf("%s.labelSelector must not be set: it is deduced for each pod", at)
		}
		for j, other := range constraints[:i] {
			if other.TopologyKey == c.TopologyKey && other.WhenUnsatisfiable == c.WhenUnsatisfiable {
				return fmt.Errorf("%s repeats %s[%d]'s topologyKey %q and whenUnsatisfiable %s", at, field, j, c.TopologyKey, c.WhenUnsatisfiable)
			}
		}
	}
	return nil
}

// pluginEnabled reports whether PodTopologySpread runs at an extension
// point of a profile, with kube-scheduler's precedence: the extension
// point's own enabled, then disabled list, then multiPoint's; it is a
// default plugin, so on unless disabled ("*" disables every default).
func pluginEnabled(plugins *schedulerv1.Plugins, point func(*schedulerv1.Plugins) schedulerv1.PluginSet) bool {
	if plugins == nil {
		return true
	}
	for _, set := range []schedulerv1.PluginSet{point(plugins), plugins.MultiPoint} {
		if names(set.Enabled, podTopologySpread) {
			return true
		}
		if names(set.Disabled, podTopologySpread) || names(set.Disabled, "*") {
			return false
		}
	}
	return true
}

func names(list []schedulerv1.Plugin, name string) bool {
	return slices.ContainsFunc(list, func(p schedulerv1.Plugin) bool { return p.Name == name })
}
