package options_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const kscHeader = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

var (
	zoneHard = corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}
	hostSoft = corev1.TopologySpreadConstraint{MaxSkew: 3, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway}
)

const listProfile = `profiles:
- pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: DoNotSchedule
      - maxSkew: 3
        topologyKey: kubernetes.io/hostname
        whenUnsatisfiable: ScheduleAnyway
`

func TestLoadSchedulerConfig(t *testing.T) {
	tests := map[string]struct {
		file      string // written to a file whose path is the value
		inline    string // the value itself
		want      scheduling.SpreadDefaults
		unapplied []string
	}{
		"empty: no defaults": {},
		"upstream Karpenter's inline document applies to every scheduler": {
			inline: "podTopologySpread:\n  defaultConstraints:\n  - maxSkew: 1\n    topologyKey: topology.kubernetes.io/zone\n    whenUnsatisfiable: DoNotSchedule\n",
			want:   scheduling.SpreadDefaults{scheduling.AnyScheduler: {zoneHard}},
		},
		"upstream Karpenter's document as JSON": {
			inline: `{"podTopologySpread":{"defaultConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]}}`,
			want:   scheduling.SpreadDefaults{scheduling.AnyScheduler: {zoneHard}},
		},
		"upstream Karpenter's document in a file": {
			file: "podTopologySpread:\n  defaultConstraints:\n  - maxSkew: 1\n    topologyKey: topology.kubernetes.io/zone\n    whenUnsatisfiable: DoNotSchedule\n",
			want: scheduling.SpreadDefaults{scheduling.AnyScheduler: {zoneHard}},
		},
		"KubeSchedulerConfiguration with List defaulting": {
			file: kscHeader + listProfile,
			want: scheduling.SpreadDefaults{scheduling.DefaultSchedulerName: {zoneHard, hostSoft}},
		},
		"KubeSchedulerConfiguration inline": {
			inline: kscHeader + listProfile,
			want:   scheduling.SpreadDefaults{scheduling.DefaultSchedulerName: {zoneHard, hostSoft}},
		},
		"System defaulting: kube-scheduler's built-in ScheduleAnyway defaults are not applied": {
			file:      kscHeader + "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: System\n",
			want:      scheduling.SpreadDefaults{scheduling.DefaultSchedulerName: nil},
			unapplied: []string{scheduling.DefaultSchedulerName},
		},
		"no PodTopologySpread args means System": {
			file:      kscHeader + "profiles:\n- schedulerName: default-scheduler\n",
			want:      scheduling.SpreadDefaults{scheduling.DefaultSchedulerName: nil},
			unapplied: []string{scheduling.DefaultSchedulerName},
		},
		"no profiles means kube-scheduler's default profile": {
			file:      kscHeader,
			want:      scheduling.SpreadDefaults{scheduling.DefaultSchedulerName: nil},
			unapplied: []string{scheduling.DefaultSchedulerName},
		},
		"each profile keeps its own defaults": {
			file: kscHeader + listProfile + "- schedulerName: batch\n  pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 3\n        topologyKey: kubernetes.io/hostname\n        whenUnsatisfiable: ScheduleAnyway\n",
			want: scheduling.SpreadDefaults{scheduling.DefaultSchedulerName: {zoneHard, hostSoft}, "batch": {hostSoft}},
		},
		"the plugin disabled at filter keeps only its scoring defaults": {
			file: kscHeader + strings.Replace(listProfile, "- pluginConfig:", "- plugins:\n    filter:\n      disabled:\n      - name: PodTopologySpread\n  pluginConfig:", 1),
			want: scheduling.SpreadDefaults{scheduling.DefaultSchedulerName: {hostSoft}},
		},
		"every default plugin disabled, PodTopologySpread enabled again": {
			file: kscHeader + strings.Replace(listProfile, "- pluginConfig:", "- plugins:\n    multiPoint:\n      disabled:\n      - name: '*'\n      enabled:\n      - name: PodTopologySpread\n  pluginConfig:", 1),
			want: scheduling.SpreadDefaults{scheduling.DefaultSchedulerName: {zoneHard, hostSoft}},
		},
		"a kubeadm-style file with the scheduler's other settings": {
			file: kscHeader + "clientConnection:\n  kubeconfig: /etc/kubernetes/scheduler.conf\nleaderElection:\n  leaderElect: true\npercentageOfNodesToScore: 50\nparallelism: 16\n" + listProfile,
			want: scheduling.SpreadDefaults{scheduling.DefaultSchedulerName: {zoneHard, hostSoft}},
		},
		"other plugins' args are left alone": {
			file: kscHeader + listProfile + "  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n",
			want: scheduling.SpreadDefaults{scheduling.DefaultSchedulerName: {zoneHard, hostSoft}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			value := tc.inline
			if tc.file != "" {
				value = writeConfig(t, tc.file)
			}
			cfg, err := options.LoadSchedulerConfig(value)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, cfg.Spread); diff != "" {
				t.Errorf("defaults (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.unapplied, cfg.Unapplied); diff != "" {
				t.Errorf("unapplied profiles (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestLoadSchedulerConfigRejects(t *testing.T) {
	constraint := func(fields string) string {
		return kscHeader + "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:\n      - " + fields + "\n"
	}
	tests := map[string]struct {
		file    string
		inline  string
		missing bool
		wantErr string
	}{
		"a file that does not exist":   {missing: true, wantErr: "no such file"},
		"not YAML":                     {file: "profiles: [", wantErr: "not YAML or JSON"},
		"an empty file":                {file: "# nothing\n", wantErr: "empty"},
		"an unknown field":             {file: kscHeader + "profile:\n- schedulerName: x\n", wantErr: `unknown field "profile"`},
		"an unknown field in the args": {file: constraint("maxSkew: 1\n        topologyKey: kubernetes.io/hostname\n        whenUnsatisfiable: DoNotSchedule\n      skew: 2"), wantErr: `unknown field "skew"`},
		"an older apiVersion":          {file: "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n", wantErr: `apiVersion "kubescheduler.config.k8s.io/v1beta3" is not supported`},
		"another kind":                 {file: "apiVersion: v1\nkind: ConfigMap\n", wantErr: `kind "ConfigMap" is not KubeSchedulerConfiguration`},
		"maxSkew 0":                    {file: constraint("maxSkew: 0\n        topologyKey: kubernetes.io/hostname\n        whenUnsatisfiable: DoNotSchedule"), wantErr: "defaultConstraints[0].maxSkew 0 must be greater than 0"},
		"no topologyKey":               {file: constraint("maxSkew: 1\n        whenUnsatisfiable: DoNotSchedule"), wantErr: "topologyKey must be set"},
		"a bad whenUnsatisfiable":      {file: constraint("maxSkew: 1\n        topologyKey: kubernetes.io/hostname\n        whenUnsatisfiable: Sometimes"), wantErr: `whenUnsatisfiable "Sometimes"`},
		"a labelSelector": {
			file:    constraint("maxSkew: 1\n        topologyKey: kubernetes.io/hostname\n        whenUnsatisfiable: DoNotSchedule\n        labelSelector: {matchLabels: {app: web}}"),
			wantErr: "labelSelector must not be set",
		},
		"a repeated constraint": {
			file:    constraint("maxSkew: 1\n        topologyKey: kubernetes.io/hostname\n        whenUnsatisfiable: DoNotSchedule\n      - maxSkew: 2\n        topologyKey: kubernetes.io/hostname\n        whenUnsatisfiable: DoNotSchedule"),
			wantErr: "repeats",
		},
		"constraints under System defaulting": {
			file:    kscHeader + strings.Replace(listProfile, "List", "System", 1),
			wantErr: "defaultingType must be List",
		},
		"constraints without a defaultingType (System by default)": {
			file:    kscHeader + strings.Replace(listProfile, "      defaultingType: List\n", "", 1),
			wantErr: "defaultingType must be List",
		},
		"two profiles with one name": {
			file:    kscHeader + "profiles:\n- schedulerName: a\n- schedulerName: a\n",
			wantErr: `schedulerName "a" is used by another profile`,
		},
		"upstream Karpenter's document with an unknown field": {
			inline:  "podTopologySpread:\n  constraints: []\n",
			wantErr: `unknown field "constraints"`,
		},
		"upstream Karpenter's document with matchLabelKeys": {
			inline:  "podTopologySpread:\n  defaultConstraints:\n  - maxSkew: 1\n    topologyKey: kubernetes.io/hostname\n    whenUnsatisfiable: DoNotSchedule\n    matchLabelKeys: [pod-template-hash]\n",
			wantErr: "matchLabelKeys must not be set",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			value := tc.inline
			switch {
			case tc.file != "":
				value = writeConfig(t, tc.file)
			case tc.missing:
				value = filepath.Join(t.TempDir(), "missing.yaml")
			}
			_, err := options.LoadSchedulerConfig(value)
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q, want it to contain %q", err, tc.wantErr)
			}
			if tc.inline == "" && !strings.Contains(err.Error(), value) {
				t.Errorf("error %q does not name the file %s", err, value)
			}
			if !strings.Contains(err.Error(), "--scheduler-config") {
				t.Errorf("error %q does not name --scheduler-config", err)
			}
		})
	}
}

// TestSchedulerConfigFlag: the flag and SCHEDULER_CONFIG reach the
// options; a bad file stops Parse; System defaulting is named at start.
func TestSchedulerConfigFlag(t *testing.T) {
	path := writeConfig(t, kscHeader+listProfile)
	o, err := parse(t, "--scheduler-config="+path)
	if err != nil {
		t.Fatal(err)
	}
	if got := o.SchedulerConfig.Spread[scheduling.DefaultSchedulerName]; len(got) != 2 {
		t.Errorf("default-scheduler defaults = %v, want the file's two", got)
	}

	t.Setenv("SCHEDULER_CONFIG", "podTopologySpread:\n  defaultConstraints:\n  - maxSkew: 1\n    topologyKey: topology.kubernetes.io/zone\n    whenUnsatisfiable: DoNotSchedule\n")
	o, err = parse(t)
	if err != nil {
		t.Fatal(err)
	}
	if got := o.SchedulerConfig.Spread[scheduling.AnyScheduler]; len(got) != 1 {
		t.Errorf("defaults from SCHEDULER_CONFIG = %v, want one", got)
	}

	bad := writeConfig(t, kscHeader+"profiles: {}\n")
	if _, err := parse(t, "--scheduler-config="+bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("error %v, want one naming %s", err, bad)
	}

	system := writeConfig(t, kscHeader)
	o, err = parse(t, "--scheduler-config="+system)
	if err != nil {
		t.Fatal(err)
	}
	if inert := strings.Join(o.Inert(), "\n"); !strings.Contains(inert, "System default spread") {
		t.Errorf("start warnings %q do not say System defaulting is not applied", inert)
	}
}
