package charts_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/karp-autoscaler/karp/charts"
)

const namespace = "karp-system"

// nonDefault sets a value of every kind the templates branch on.
func nonDefault() map[string]any {
	return map[string]any{
		"fullnameOverride":      "autoscaler",
		"additionalLabels":      map[string]any{"team": "platform"},
		"additionalAnnotations": map[string]any{"owner": "platform"},
		"imagePullSecrets":      []any{map[string]any{"name": "regcred"}},
		"replicas":              3,
		"serviceAccount": map[string]any{
			"annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/karp"},
		},
		"additionalClusterRoleRules": []any{map[string]any{
			"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get"},
		}},
		"serviceMonitor": map[string]any{
			"enabled":          true,
			"additionalLabels": map[string]any{"release": "prometheus"},
			"endpointConfig":   map[string]any{"interval": "15s"},
			"sampleLimit":      5000,
		},
		"initContainers":                []any{map[string]any{"name": "wait", "image": "busybox"}},
		"podAnnotations":                map[string]any{"prometheus.io/scrape": "true"},
		"podDisruptionBudget":           map[string]any{"name": "karp-pdb", "maxUnavailable": 2},
		"priorityClassName":             "high",
		"terminationGracePeriodSeconds": 120,
		"nodeSelector":                  map[string]any{"role": "system"},
		"tolerations":                   []any{map[string]any{"key": "dedicated", "operator": "Exists"}},
		"topologySpreadConstraints": []any{map[string]any{
			"maxSkew": 2, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
		}},
		"extraVolumes": []any{map[string]any{"name": "catalog", "configMap": map[string]any{"name": "catalog"}}},
		"logLevel":     "debug",
		"controller": map[string]any{
			"image":             map[string]any{"tag": "9.9.9", "digest": "sha256:" + strings.Repeat("ab", 32)},
			"resources":         map[string]any{"requests": map[string]any{"cpu": "500m", "memory": "512Mi"}, "limits": map[string]any{"memory": "1Gi"}},
			"extraVolumeMounts": []any{map[string]any{"name": "catalog", "mountPath": "/catalog"}},
			"env":               []any{map[string]any{"name": "EXTRA", "value": "1"}},
			"securityContext":   map[string]any{"seccompProfile": map[string]any{"type": "RuntimeDefault"}},
		},
		"settings": map[string]any{
			"cloudProvider":     "aws",
			"clusterName":       "prod",
			"interruptionQueue": "prod-interruptions",
			"batchMaxDuration":  "20s",
			"batchIdleDuration": "2s",
			"minValuesPolicy":   "BestEffort",
			"schedulerConfig": map[string]any{"podTopologySpread": map[string]any{"defaultConstraints": []any{
				map[string]any{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}}}},
			"kubeClientQPS":         50,
			"instanceTypesFilePath": "/catalog/types.json",
			"featureGates":          map[string]any{"spotToSpotConsolidation": true, "nodeRepair": true},
			"respectRolloutBudget":  false,
		},
	}
}

func TestLint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chart  string
		values map[string]any
	}{
		{"karp defaults", charts.Karp, nil},
		{"karp non-default", charts.Karp, nonDefault()},
		{"karp-crd defaults", charts.KarpCRD, nil},
		{"karp-crd annotations", charts.KarpCRD, map[string]any{"additionalAnnotations": map[string]any{"helm.sh/resource-policy": "keep"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := charts.Lint(tc.chart, namespace, tc.values); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLintReportsSchemaViolations(t *testing.T) {
	err := charts.Lint(charts.Karp, namespace, map[string]any{"replica": 3})
	if err == nil || !strings.Contains(err.Error(), "replica") {
		t.Fatalf("lint with a misspelled value: got %v, want an error naming replica", err)
	}
}

func render(t *testing.T, chart string, rel charts.Release) map[string]*unstructured.Unstructured {
	t.Helper()
	if rel.Name == "" {
		rel.Name = "karp"
	}
	rel.Namespace = namespace
	objs, err := charts.Objects(chart, rel)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		key := o.GetKind() + "/" + o.GetName()
		if _, dup := byKey[key]; dup {
			t.Fatalf("%s rendered twice", key)
		}
		byKey[key] = o
	}
	return byKey
}

func keys(m map[string]*unstructured.Unstructured) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func convert[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	if o == nil {
		t.Fatalf("object missing")
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, out, true); err != nil {
		t.Fatalf("%s/%s does not decode strictly: %v", o.GetKind(), o.GetName(), err)
	}
	return out
}

func envOf(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

// generatedRules reads charts/karp/rbac/role.yaml, what controller-gen
// wrote from the code's markers.
func generatedRules(t *testing.T) (cluster, namespaced []rbacv1.PolicyRule) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(charts.Dir(charts.Karp), "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var role rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(doc), &role); err != nil {
			t.Fatal(err)
		}
		switch role.Kind {
		case "ClusterRole":
			cluster = append(cluster, role.Rules...)
		case "Role":
			namespaced = append(namespaced, role.Rules...)
		}
	}
	if len(cluster) == 0 || len(namespaced) == 0 {
		t.Fatalf("rbac/role.yaml: %d cluster and %d namespaced rules; want both", len(cluster), len(namespaced))
	}
	return cluster, namespaced
}

func TestDefaults(t *testing.T) {
	objs := render(t, charts.Karp, charts.Release{})
	want := []string{
		"ClusterRole/karp", "ClusterRole/karp-admin", "ClusterRoleBinding/karp", "Deployment/karp",
		"PodDisruptionBudget/karp", "Role/karp", "RoleBinding/karp", "Service/karp", "ServiceAccount/karp",
	}
	if diff := cmp.Diff(want, keys(objs)); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}

	deploy := convert[appsv1.Deployment](t, objs["Deployment/karp"])
	spec := deploy.Spec.Template.Spec
	if *deploy.Spec.Replicas != 2 {
		t.Errorf("replicas = %d, want 2", *deploy.Spec.Replicas)
	}
	if spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName = %q", spec.PriorityClassName)
	}
	if spec.ServiceAccountName != "karp" {
		t.Errorf("serviceAccountName = %q", spec.ServiceAccountName)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.Image != "ghcr.io/karp-autoscaler/karp-controller:"+appVersion(t) {
		t.Errorf("image = %q", c.Image)
	}
	sc := c.SecurityContext
	if sc == nil || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || *sc.RunAsUser != 65532 ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext = %+v, want non-root 65532, read-only root, no escalation, drop ALL", sc)
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes on %q and %q, want /healthz and /readyz", c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
	}
	env := envOf(c)
	for name, value := range map[string]string{
		"CLOUD_PROVIDER": "kwok", "LOG_LEVEL": "info", "METRICS_PORT": "8080", "HEALTH_PROBE_PORT": "8081", "RESPECT_ROLLOUT_BUDGET": "true",
		"BATCH_MAX_DURATION": "10s", "BATCH_IDLE_DURATION": "1s", "PREFERENCE_POLICY": "Respect", "MIN_VALUES_POLICY": "Strict",
		"FEATURE_GATES": "CapacityBuffer=false,NodeOverlay=false,NodeRepair=false,ProvisioningRequest=false,ReservedCapacity=true,SpotToSpotConsolidation=false,StaticCapacity=false",
	} {
		if env[name].Value != value {
			t.Errorf("env %s = %q, want %q", name, env[name].Value, value)
		}
	}
	if ref := env["LEADER_ELECTION_NAMESPACE"].ValueFrom; ref == nil || ref.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("LEADER_ELECTION_NAMESPACE = %+v, want the pod's namespace", env["LEADER_ELECTION_NAMESPACE"])
	}
	for _, name := range []string{"CLUSTER_NAME", "AWS_FEATURE_GATES", "CPU_REQUESTS", "MEMORY_LIMIT"} {
		if _, ok := env[name]; ok {
			t.Errorf("env %s set with default values", name)
		}
	}
	// The default affinity and spread get the chart's selector as labelSelector.
	anti := spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(anti) != 1 || anti[0].LabelSelector == nil || anti[0].LabelSelector.MatchLabels["app.kubernetes.io/instance"] != "karp" {
		t.Errorf("pod anti-affinity = %+v, want one term selecting the release's pods", anti)
	}
	if tsc := spec.TopologySpreadConstraints; len(tsc) != 1 || tsc[0].LabelSelector == nil {
		t.Errorf("topology spread = %+v, want one constraint with a labelSelector", tsc)
	}
	if na := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; na == nil ||
		na.NodeSelectorTerms[0].MatchExpressions[0].Key != "karpenter.sh/nodepool" {
		t.Errorf("node affinity = %+v, want karpenter.sh/nodepool DoesNotExist", na)
	}

	sa := convert[corev1.ServiceAccount](t, objs["ServiceAccount/karp"])
	if sa.Namespace != namespace {
		t.Errorf("ServiceAccount namespace = %q", sa.Namespace)
	}
	svc := convert[corev1.Service](t, objs["Service/karp"])
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "http-metrics" || svc.Spec.Ports[0].Port != 8080 {
		t.Errorf("Service ports = %+v, want http-metrics 8080", svc.Spec.Ports)
	}

	// The roles are exactly what controller-gen generated from the code.
	cluster, namespaced := generatedRules(t)
	if diff := cmp.Diff(cluster, convert[rbacv1.ClusterRole](t, objs["ClusterRole/karp"]).Rules); diff != "" {
		t.Errorf("ClusterRole rules differ from rbac/role.yaml (-want +got):\n%s", diff)
	}
	role := convert[rbacv1.Role](t, objs["Role/karp"])
	if role.Namespace != namespace {
		t.Errorf("Role namespace = %q, want %q", role.Namespace, namespace)
	}
	if diff := cmp.Diff(namespaced, role.Rules); diff != "" {
		t.Errorf("Role rules differ from rbac/role.yaml (-want +got):\n%s", diff)
	}
	binding := convert[rbacv1.ClusterRoleBinding](t, objs["ClusterRoleBinding/karp"])
	if binding.RoleRef.Name != "karp" || len(binding.Subjects) != 1 || binding.Subjects[0].Name != "karp" || binding.Subjects[0].Namespace != namespace {
		t.Errorf("ClusterRoleBinding = %+v, want ClusterRole karp bound to %s/karp", binding, namespace)
	}
}

func TestNonDefault(t *testing.T) {
	objs := render(t, charts.Karp, charts.Release{Values: nonDefault(), APIVersions: []string{"monitoring.coreos.com/v1"}})
	if _, ok := objs["ServiceMonitor/autoscaler"]; !ok {
		t.Fatalf("no ServiceMonitor; rendered %v", keys(objs))
	}
	if _, ok := objs["PodDisruptionBudget/karp-pdb"]; !ok {
		t.Errorf("no PodDisruptionBudget karp-pdb; rendered %v", keys(objs))
	}
	deploy := convert[appsv1.Deployment](t, objs["Deployment/autoscaler"])
	if deploy.Labels["team"] != "platform" || deploy.Annotations["owner"] != "platform" {
		t.Errorf("Deployment metadata = %v %v, want additionalLabels and additionalAnnotations", deploy.Labels, deploy.Annotations)
	}
	spec := deploy.Spec.Template.Spec
	c := spec.Containers[0]
	if want := "ghcr.io/karp-autoscaler/karp-controller:9.9.9@sha256:" + strings.Repeat("ab", 32); c.Image != want {
		t.Errorf("image = %q, want %q", c.Image, want)
	}
	if *deploy.Spec.Replicas != 3 || spec.PriorityClassName != "high" || *spec.TerminationGracePeriodSeconds != 120 ||
		spec.NodeSelector["role"] != "system" || spec.Tolerations[0].Key != "dedicated" ||
		deploy.Spec.Template.Annotations["prometheus.io/scrape"] != "true" || spec.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("pod spec does not carry the values: %+v", spec)
	}
	if len(spec.Volumes) != 1 || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/catalog" {
		t.Errorf("volumes %+v mounts %+v, want the extra catalog volume", spec.Volumes, c.VolumeMounts)
	}
	if tsc := spec.TopologySpreadConstraints; len(tsc) != 1 || tsc[0].MaxSkew != 2 || tsc[0].LabelSelector == nil {
		t.Errorf("topology spread = %+v", tsc)
	}
	if c.SecurityContext.SeccompProfile == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("securityContext = %+v, want the seccomp profile merged into the fixed context", c.SecurityContext)
	}
	env := envOf(c)
	for name, value := range map[string]string{
		"CLOUD_PROVIDER": "aws", "CLUSTER_NAME": "prod", "INTERRUPTION_QUEUE": "prod-interruptions", "LOG_LEVEL": "debug",
		"BATCH_MAX_DURATION": "20s", "BATCH_IDLE_DURATION": "2s", "MIN_VALUES_POLICY": "BestEffort", "KUBE_CLIENT_QPS": "50",
		"INSTANCE_TYPES_FILE_PATH": "/catalog/types.json", "AWS_FEATURE_GATES": "NodeClassCEL=false", "EXTRA": "1",
		"VM_MEMORY_OVERHEAD_PERCENT": "0.075",
		"RESPECT_ROLLOUT_BUDGET":     "false",
		"SCHEDULER_CONFIG":           `{"podTopologySpread":{"defaultConstraints":[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]}}`,
		"FEATURE_GATES":              "CapacityBuffer=false,NodeOverlay=false,NodeRepair=true,ProvisioningRequest=false,ReservedCapacity=true,SpotToSpotConsolidation=true,StaticCapacity=false",
	} {
		if env[name].Value != value {
			t.Errorf("env %s = %q, want %q", name, env[name].Value, value)
		}
	}
	for _, name := range []string{"ISOLATED_VPC", "CLUSTER_ENDPOINT"} {
		if _, ok := env[name]; ok {
			t.Errorf("env %s set although its value is empty or false", name)
		}
	}
	if ref := env["CPU_REQUESTS"].ValueFrom; ref == nil || ref.ResourceFieldRef.Resource != "requests.cpu" || ref.ResourceFieldRef.Divisor.String() != "1m" {
		t.Errorf("CPU_REQUESTS = %+v, want requests.cpu in millicores", env["CPU_REQUESTS"])
	}
	if ref := env["MEMORY_LIMIT"].ValueFrom; ref == nil || ref.ResourceFieldRef.Resource != "limits.memory" {
		t.Errorf("MEMORY_LIMIT = %+v, want limits.memory", env["MEMORY_LIMIT"])
	}
	sa := convert[corev1.ServiceAccount](t, objs["ServiceAccount/autoscaler"])
	if sa.Annotations["eks.amazonaws.com/role-arn"] != "arn:aws:iam::111122223333:role/karp" {
		t.Errorf("ServiceAccount annotations = %v, want the IRSA role", sa.Annotations)
	}
	rules := convert[rbacv1.ClusterRole](t, objs["ClusterRole/autoscaler"]).Rules
	if last := rules[len(rules)-1]; !slices.Equal(last.Resources, []string{"configmaps"}) {
		t.Errorf("last ClusterRole rule = %+v, want additionalClusterRoleRules appended", last)
	}
	sm := objs["ServiceMonitor/autoscaler"]
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["interval"] != "15s" || endpoints[0].(map[string]any)["port"] != "http-metrics" {
		t.Errorf("ServiceMonitor endpoints = %v", endpoints)
	}
	if limit, _, _ := unstructured.NestedFieldNoCopy(sm.Object, "spec", "sampleLimit"); fmt.Sprint(limit) != "5000" {
		t.Errorf("ServiceMonitor sampleLimit = %v, want 5000", limit)
	}
	if len(spec.InitContainers) != 1 || spec.InitContainers[0].Name != "wait" {
		t.Errorf("initContainers = %+v, want the wait container", spec.InitContainers)
	}
	if sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels = %v", sm.GetLabels())
	}
}

func TestServiceMonitorNeedsItsAPI(t *testing.T) {
	objs := render(t, charts.Karp, charts.Release{Values: map[string]any{"serviceMonitor": map[string]any{"enabled": true}}})
	if _, ok := objs["ServiceMonitor/karp"]; ok {
		t.Error("ServiceMonitor rendered although monitoring.coreos.com/v1 is not served")
	}
}

func TestRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []string
	}{
		{"misspelled top-level value", map[string]any{"replica": 3}, []string{"additional properties", "'replica'"}},
		{"misspelled setting", map[string]any{"settings": map[string]any{"batchMaxDuraton": "5s"}}, []string{"/settings", "'batchMaxDuraton'"}},
		{"misspelled feature gate", map[string]any{"settings": map[string]any{"featureGates": map[string]any{"nodeRepiar": true}}}, []string{"'nodeRepiar'"}},
		{"bad log level", map[string]any{"logLevel": "verbose"}, []string{"/logLevel"}},
		{"bad duration", map[string]any{"settings": map[string]any{"batchIdleDuration": "1 second"}}, []string{"/settings/batchIdleDuration"}},
		{"aws without a cluster name", map[string]any{"settings": map[string]any{"cloudProvider": "aws"}}, []string{"settings.clusterName is required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := charts.Render(charts.Karp, charts.Release{Name: "karp", Namespace: namespace, Values: tc.values})
			if err == nil {
				t.Fatal("rendered; want an error")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestCRDChart(t *testing.T) {
	objs := render(t, charts.KarpCRD, charts.Release{Values: map[string]any{"additionalAnnotations": map[string]any{"helm.sh/resource-policy": "keep"}}})
	want := []string{
		"CustomResourceDefinition/capacitybuffers.autoscaling.x-k8s.io",
		"CustomResourceDefinition/ec2nodeclasses.karpenter.k8s.aws",
		"CustomResourceDefinition/kwoknodeclasses.karpenter.kwok.sh",
		"CustomResourceDefinition/nodeclaims.karpenter.sh",
		"CustomResourceDefinition/nodeoverlays.karpenter.sh",
		"CustomResourceDefinition/nodepools.karpenter.sh",
		"CustomResourceDefinition/provisioningrequests.autoscaling.x-k8s.io",
	}
	if diff := cmp.Diff(want, keys(objs)); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	for _, key := range want {
		crd := objs[key]
		if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("%s annotations = %v, want additionalAnnotations", key, crd.GetAnnotations())
		}
		// Apart from the added annotation, the template is the generated CRD.
		plural, group, _ := strings.Cut(crd.GetName(), ".")
		source := readCRD(t, filepath.Join("..", "pkg", "apis", "crds", group+"_"+plural+".yaml"))
		got := crd.DeepCopy()
		annotations := got.GetAnnotations()
		delete(annotations, "helm.sh/resource-policy")
		got.SetAnnotations(annotations)
		if diff := cmp.Diff(source.Object, got.Object); diff != "" {
			t.Errorf("%s differs from pkg/apis/crds (-want +got):\n%s", key, diff)
		}
	}
}

// The karp chart's crds/ directory is the generated CRDs, byte for byte.
func TestChartCRDsAreGenerated(t *testing.T) {
	generated, err := filepath.Glob(filepath.Join("..", "pkg", "apis", "crds", "*.yaml"))
	if err != nil || len(generated) == 0 {
		t.Fatalf("no generated CRDs: %v", err)
	}
	for _, dir := range []string{filepath.Join(charts.Dir(charts.Karp), "crds"), filepath.Join(charts.Dir(charts.KarpCRD), "files")} {
		shipped, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if len(shipped) != len(generated) {
			t.Errorf("%s holds %d CRDs, pkg/apis/crds %d: run make generate", dir, len(shipped), len(generated))
		}
		for _, g := range generated {
			want, _ := os.ReadFile(g)
			got, err := os.ReadFile(filepath.Join(dir, filepath.Base(g)))
			if err != nil || string(got) != string(want) {
				t.Errorf("%s/%s differs from %s: run make generate", dir, filepath.Base(g), g)
			}
		}
	}
}

func readCRD(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := charts.Decode(string(raw))
	if err != nil || len(objs) != 1 {
		t.Fatalf("%s: %d objects, %v", path, len(objs), err)
	}
	return objs[0]
}

func appVersion(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(charts.Dir(charts.Karp), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(raw, &meta); err != nil || meta.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion: %q, %v", meta.AppVersion, err)
	}
	return meta.AppVersion
}

// TestUpstreamValuesCarryOver renders a values file written for upstream
// Karpenter's chart (plus settings.cloudProvider, karp's own): the schema
// accepts every key, and the settings reach the environment under
// upstream's names.
func TestUpstreamValuesCarryOver(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "upstream-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	values["settings"].(map[string]any)["cloudProvider"] = "aws"
	if err := charts.Lint(charts.Karp, namespace, values); err != nil {
		t.Fatal(err)
	}
	objs := render(t, charts.Karp, charts.Release{Values: values})
	deploy := convert[appsv1.Deployment](t, objs["Deployment/karpenter"])
	c := deploy.Spec.Template.Spec.Containers[0]
	env := envOf(c)
	for name, value := range map[string]string{"CLUSTER_NAME": "prod", "INTERRUPTION_QUEUE": "Karpenter-prod", "AWS_REGION": "eu-west-1"} {
		if env[name].Value != value {
			t.Errorf("env %s = %q, want %q", name, env[name].Value, value)
		}
	}
	if _, ok := env["CPU_REQUESTS"]; !ok {
		t.Error("no CPU_REQUESTS although controller.resources.requests.cpu is set")
	}
	sa := convert[corev1.ServiceAccount](t, objs["ServiceAccount/karpenter"])
	if sa.Annotations["eks.amazonaws.com/role-arn"] == "" {
		t.Error("the IRSA annotation did not reach the ServiceAccount")
	}
	if _, ok := objs["PodDisruptionBudget/karpenter"]; !ok {
		t.Errorf("no PodDisruptionBudget karpenter; rendered %v", keys(objs))
	}
}

// TestSchedulerConfigValue: settings.schedulerConfig reaches the
// controller as SCHEDULER_CONFIG, a string (a document or a mounted
// file's path) as it is, and only when set.
func TestSchedulerConfigValue(t *testing.T) {
	envFor := func(values map[string]any) map[string]corev1.EnvVar {
		objs := render(t, charts.Karp, charts.Release{Values: values})
		return envOf(convert[appsv1.Deployment](t, objs["Deployment/karp"]).Spec.Template.Spec.Containers[0])
	}
	if v, ok := envFor(nil)["SCHEDULER_CONFIG"]; ok {
		t.Errorf("SCHEDULER_CONFIG = %q by default, want it unset", v.Value)
	}
	path := "/etc/karp/scheduler-config.yaml"
	if got := envFor(map[string]any{"settings": map[string]any{"schedulerConfig": path}})["SCHEDULER_CONFIG"].Value; got != path {
		t.Errorf("SCHEDULER_CONFIG = %q, want the path %q", got, path)
	}
}

// TestExplainRole: off by default; when created, the ClusterRole only
// reads, and covers what `karp explain` lists.
func TestExplainRole(t *testing.T) {
	if _, ok := render(t, charts.Karp, charts.Release{})["ClusterRole/karp-explain"]; ok {
		t.Error("the explain ClusterRole is created by default")
	}
	objs := render(t, charts.Karp, charts.Release{Values: map[string]any{"explainRole": map[string]any{"create": true}}})
	obj, ok := objs["ClusterRole/karp-explain"]
	if !ok {
		t.Fatalf("no ClusterRole karp-explain; rendered %v", keys(objs))
	}
	role := convert[rbacv1.ClusterRole](t, obj)
	granted := map[string]bool{}
	for _, rule := range role.Rules {
		for _, verb := range rule.Verbs {
			if verb != "get" && verb != "list" {
				t.Errorf("rule %+v grants %q; the explain role only reads", rule, verb)
			}
		}
		for _, r := range rule.Resources {
			granted[r] = true
		}
	}
	for _, r := range []string{"nodepools", "nodeclaims", "nodes", "pods", "daemonsets", "poddisruptionbudgets", "namespaces", "limitranges",
		"nodeoverlays", "capacitybuffers", "podtemplates"} {
		if !granted[r] {
			t.Errorf("the explain role cannot read %s", r)
		}
	}
}
