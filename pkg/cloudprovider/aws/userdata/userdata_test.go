package userdata

import (
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the rendered user data")

func baseOptions() Options {
	return Options{
		ClusterName:     "my-cluster",
		ClusterEndpoint: "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com",
		CABundle:        base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n")),
		ClusterCIDR:     "10.100.0.0/16",
		ClusterDNSIP:    "10.100.0.10",
		MaxPods:         ptr.To[int32](29),
		Labels: map[string]string{
			"karpenter.sh/nodepool":            "default",
			"karpenter.sh/capacity-type":       "spot",
			"karpenter.sh/do-not-sync-taints":  "true",
			"team":                             "payments",
			"kubernetes.io/arch":               "amd64",
			"node.kubernetes.io/instance-type": "m5.large",
			"node-role.k8s.io/worker":          "true",
		},
		Taints: []corev1.Taint{{Key: "dedicated", Value: "payments", Effect: corev1.TaintEffectNoSchedule}},
	}
}

func fullKubelet() *awsv1.KubeletConfiguration {
	return &awsv1.KubeletConfiguration{
		ClusterDNS:                  []string{"10.0.1.100"},
		MaxPods:                     ptr.To[int32](110),
		PodsPerCore:                 ptr.To[int32](10),
		SystemReserved:              map[string]string{"cpu": "100m", "memory": "100Mi"},
		KubeReserved:                map[string]string{"cpu": "200m", "memory": "300Mi", "ephemeral-storage": "3Gi"},
		EvictionHard:                map[string]string{"memory.available": "5%", "nodefs.available": "10%"},
		EvictionSoft:                map[string]string{"memory.available": "500Mi"},
		EvictionSoftGracePeriod:     map[string]metav1.Duration{"memory.available": {Duration: time.Minute}},
		EvictionMaxPodGracePeriod:   ptr.To[int32](60),
		ImageGCHighThresholdPercent: ptr.To[int32](85),
		ImageGCLowThresholdPercent:  ptr.To[int32](80),
		CPUCFSQuota:                 ptr.To(false),
	}
}

const (
	userShell      = "#!/bin/bash\necho 'hello from the user'\n"
	userNodeConfig = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n"
	userMIME       = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n--BOUNDARY\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n#!/bin/bash\necho first\n\n--BOUNDARY\nContent-Type: application/node.eks.aws\n\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 42\n\n--BOUNDARY--\n"
	userTOML       = "[settings.kubernetes]\ncluster-name = \"someone-else\"\nkube-api-qps = 30\nshutdown-grace-period = \"30s\"\n\n[settings.kubernetes.node-labels]\nteam = \"from-user\"\nzone-owner = \"alice\"\n\n[settings.kubernetes.node-taints]\n\"user-taint\" = [\"x:NoSchedule\"]\n\n[settings.host-containers.admin]\nenabled = true\n"
)

func with(edit func(*Options)) Options {
	o := baseOptions()
	edit(&o)
	return o
}

func TestRenderGolden(t *testing.T) {
	raid0 := ptr.To(awsv1.InstanceStorePolicyRAID0)
	tests := map[string]struct {
		family string
		opts   Options
	}{
		"al2023":                    {family: awsv1.AMIFamilyAL2023, opts: baseOptions()},
		"al2023-kubelet-raid0":      {family: awsv1.AMIFamilyAL2023, opts: with(func(o *Options) { o.Kubelet = fullKubelet(); o.InstanceStorePolicy = raid0 })},
		"al2023-user-shell":         {family: awsv1.AMIFamilyAL2023, opts: with(func(o *Options) { o.UserData = ptr.To(userShell) })},
		"al2023-user-nodeconfig":    {family: awsv1.AMIFamilyAL2023, opts: with(func(o *Options) { o.UserData = ptr.To(userNodeConfig) })},
		"al2023-user-mime":          {family: awsv1.AMIFamilyAL2023, opts: with(func(o *Options) { o.UserData = ptr.To(userMIME) })},
		"bottlerocket":              {family: awsv1.AMIFamilyBottlerocket, opts: baseOptions()},
		"bottlerocket-user-toml":    {family: awsv1.AMIFamilyBottlerocket, opts: with(func(o *Options) { o.UserData = ptr.To(userTOML); o.Kubelet = fullKubelet() })},
		"bottlerocket-raid0-v1.20":  {family: awsv1.AMIFamilyBottlerocket, opts: with(func(o *Options) { o.InstanceStorePolicy = raid0; o.BottlerocketVersion = "v1.20.3" })},
		"bottlerocket-raid0-latest": {family: awsv1.AMIFamilyBottlerocket, opts: with(func(o *Options) { o.InstanceStorePolicy = raid0; o.BottlerocketVersion = "latest" })},
		"al2-kubelet": {family: awsv1.AMIFamilyAL2, opts: with(func(o *Options) {
			o.Kubelet = fullKubelet()
			o.UserData = ptr.To(userShell)
			o.InstanceStorePolicy = raid0
		})},
		"windows2022": {family: awsv1.AMIFamilyWindows2022, opts: with(func(o *Options) { o.UserData = ptr.To("Write-Host 'hello'\n") })},
		"custom":      {family: awsv1.AMIFamilyCustom, opts: with(func(o *Options) { o.UserData = ptr.To(userShell) })},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Render(tc.family, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("reading %s (run with -update to create it): %v", golden, err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s (-want,+got):\n%s", golden, diff)
			}
		})
	}
}

// The user's parts come first and karp's NodeConfig last, so nodeadm
// merges karp's cluster settings over the user's.
func TestAL2023PartOrder(t *testing.T) {
	tests := map[string]struct {
		userData  string
		wantTypes []string
	}{
		"shell script":    {userData: userShell, wantTypes: []string{contentTypeShellScript, contentTypeNodeConfig}},
		"NodeConfig":      {userData: userNodeConfig, wantTypes: []string{contentTypeNodeConfig, contentTypeNodeConfig}},
		"JSON NodeConfig": {userData: `{"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": {}}`, wantTypes: []string{contentTypeNodeConfig, contentTypeNodeConfig}},
		"plain text":      {userData: "echo hi", wantTypes: []string{contentTypeShellScript, contentTypeNodeConfig}},
		"MIME":            {userData: userMIME, wantTypes: []string{contentTypeShellScript, contentTypeNodeConfig, contentTypeNodeConfig}},
		"none":            {wantTypes: []string{contentTypeNodeConfig}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			opts := baseOptions()
			if tc.userData != "" {
				opts.UserData = ptr.To(tc.userData)
			}
			out, err := Render(awsv1.AMIFamilyAL2023, opts)
			if err != nil {
				t.Fatal(err)
			}
			parts, err := parseMIME(out)
			if err != nil {
				t.Fatalf("karp's archive does not parse: %v", err)
			}
			var gotTypes []string
			for _, p := range parts {
				gotTypes = append(gotTypes, p.contentType)
			}
			if diff := cmp.Diff(tc.wantTypes, gotTypes); diff != "" {
				t.Errorf("part types (-want,+got):\n%s", diff)
			}
			last := parts[len(parts)-1].content
			if !strings.HasPrefix(last, nodeConfigHeader) {
				t.Errorf("last part is not karp's NodeConfig:\n%s", last)
			}
			var nodeConfig struct {
				Spec struct {
					Cluster struct {
						Name, APIServerEndpoint, CIDR string
						CertificateAuthority          []byte
					}
					Kubelet struct {
						Config map[string]interface{}
						Flags  []string
					}
				}
			}
			if err := yaml.Unmarshal([]byte(last), &nodeConfig); err != nil {
				t.Fatal(err)
			}
			c := nodeConfig.Spec.Cluster
			if c.Name != "my-cluster" || c.CIDR != "10.100.0.0/16" || !strings.Contains(string(c.CertificateAuthority), "BEGIN CERTIFICATE") {
				t.Errorf("cluster = %+v", c)
			}
			if got := nodeConfig.Spec.Kubelet.Config["maxPods"]; got != float64(29) {
				t.Errorf("maxPods = %v, want the instance types' 29", got)
			}
			if diff := cmp.Diff([]string{`--node-labels="karpenter.sh/capacity-type=spot,karpenter.sh/do-not-sync-taints=true,karpenter.sh/nodepool=default,team=payments"`}, nodeConfig.Spec.Kubelet.Flags); diff != "" {
				t.Errorf("flags (-want,+got):\n%s", diff)
			}
		})
	}
}

// The user's TOML keys survive; karp's cluster settings, labels and taints
// win where both set them.
func TestBottlerocketMerge(t *testing.T) {
	out, err := Render(awsv1.AMIFamilyBottlerocket, with(func(o *Options) { o.UserData = ptr.To(userTOML) }))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Settings struct {
			Kubernetes map[string]interface{} `toml:"kubernetes"`
			Host       map[string]interface{} `toml:"host-containers"`
		} `toml:"settings"`
	}
	if _, err := toml.Decode(out, &got); err != nil {
		t.Fatalf("output is not TOML: %v\n%s", err, out)
	}
	k := got.Settings.Kubernetes
	for key, want := range map[string]interface{}{
		"cluster-name":          "my-cluster",
		"api-server":            "https://ABCDEF.gr7.us-west-2.eks.amazonaws.com",
		"kube-api-qps":          int64(30),
		"shutdown-grace-period": "30s",
		"max-pods":              int64(29),
		"cluster-dns-ip":        "10.100.0.10",
	} {
		if k[key] != want {
			t.Errorf("settings.kubernetes.%s = %#v, want %#v", key, k[key], want)
		}
	}
	wantLabels := map[string]interface{}{"team": "payments", "zone-owner": "alice", "karpenter.sh/nodepool": "default",
		"karpenter.sh/capacity-type": "spot", "karpenter.sh/do-not-sync-taints": "true"}
	if diff := cmp.Diff(wantLabels, k["node-labels"]); diff != "" {
		t.Errorf("node-labels (-want,+got):\n%s", diff)
	}
	wantTaints := map[string]interface{}{"dedicated": []interface{}{"payments:NoSchedule"}, "karpenter.sh/unregistered": []interface{}{":NoExecute"}}
	if diff := cmp.Diff(wantTaints, k["node-taints"]); diff != "" {
		t.Errorf("node-taints (-want,+got):\n%s", diff)
	}
	if got.Settings.Host["admin"] == nil {
		t.Error("the user's settings.host-containers were dropped")
	}
}

func TestRenderErrors(t *testing.T) {
	tests := map[string]struct {
		family string
		opts   Options
		want   string
	}{
		"bottlerocket user data not TOML":   {family: awsv1.AMIFamilyBottlerocket, opts: with(func(o *Options) { o.UserData = ptr.To("#!/bin/bash\necho hi") }), want: "invalid userData for Bottlerocket"},
		"bottlerocket settings not a table": {family: awsv1.AMIFamilyBottlerocket, opts: with(func(o *Options) { o.UserData = ptr.To("settings = 1\n") }), want: "settings is a int64, want a table"},
		"al2023 MIME not multipart":         {family: awsv1.AMIFamilyAL2023, opts: with(func(o *Options) { o.UserData = ptr.To("MIME-Version: 1.0\nContent-Type: text/plain\n\nhi\n") }), want: "not multipart"},
		"al2023 MIME without boundary end": {family: awsv1.AMIFamilyAL2023, opts: with(func(o *Options) {
			o.UserData = ptr.To("MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\nContent-Type: text/plain\n\nhi\n")
		}), want: "reading MIME part"},
		"al2023 malformed CA bundle":  {family: awsv1.AMIFamilyAL2023, opts: with(func(o *Options) { o.CABundle = "not base64!" }), want: "decoding the CA bundle"},
		"al2023 without service CIDR": {family: awsv1.AMIFamilyAL2023, opts: with(func(o *Options) { o.ClusterCIDR = "" }), want: "service CIDR is unknown"},
		"too large":                   {family: awsv1.AMIFamilyCustom, opts: with(func(o *Options) { o.UserData = ptr.To(strings.Repeat("#", MaxSize+1)) }), want: "exceed EC2's limit of 16384"},
		"unknown family":              {family: "Ubuntu", opts: baseOptions(), want: `unknown AMI family "Ubuntu"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Render(tc.family, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestCustomPassesThrough(t *testing.T) {
	for name, tc := range map[string]struct {
		userData *string
		want     string
	}{
		"script":  {userData: ptr.To(userTOML), want: userTOML},
		"nothing": {want: ""},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Render(awsv1.AMIFamilyCustom, with(func(o *Options) { o.UserData = tc.userData }))
			if err != nil || got != tc.want {
				t.Errorf("Render = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// An IPv6 cluster DNS address switches bootstrap.sh to the IPv6 family.
func TestAL2IPv6(t *testing.T) {
	out, err := Render(awsv1.AMIFamilyAL2, with(func(o *Options) { o.ClusterDNSIP = "fd00:10:100::a" }))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--ip-family ipv6 \\\n--dns-cluster-ip 'fd00:10:100::a'", "--max-pods=29"} {
		if !strings.Contains(out, want) {
			t.Errorf("AL2 user data lacks %q:\n%s", want, out)
		}
	}
	ipv4, err := Render(awsv1.AMIFamilyAL2, baseOptions())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ipv4, "--ip-family") {
		t.Errorf("IPv4 cluster got --ip-family:\n%s", ipv4)
	}
}

func TestBottlerocketBefore(t *testing.T) {
	for version, want := range map[string]bool{"v1.20.3": true, "1.45.9": true, "v1.46.0": false, "v2.0.0": false, "latest": false, "": false, "0.9": true} {
		if got := bottlerocketBefore(version, 1, 46); got != want {
			t.Errorf("bottlerocketBefore(%q) = %v, want %v", version, got, want)
		}
	}
}
