package manifest

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: app
          image: registry.k8s.io/pause:3.10
`

const nodePool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: default
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
`

func TestLoadSeedsReadsEveryKind(t *testing.T) {
	set, err := Load(fixtures.Example(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"NodePool": 6, "KWOKNodeClass": 1, "Deployment": 4, "DaemonSet": 1,
		"PodDisruptionBudget": 1, "PriorityClass": 1}
	got := map[string]int{}
	for kind, n := range set.Counts() {
		if n > 0 {
			got[kind] = n
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kinds read (-want,+got):\n%s", diff)
	}
	if len(set.Warnings) != 0 {
		t.Errorf("warnings = %q, want none", set.Warnings)
	}
}

func TestLoadAppliesNodePoolCRDDefaults(t *testing.T) {
	dir := writeFiles(t, map[string]string{"np.yaml": nodePool})
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	np := set.NodePools[0]
	if got := np.Spec.Template.Spec.ExpireAfter.Duration; got == nil || *got != 720*time.Hour {
		t.Errorf("expireAfter = %v, want 720h", got)
	}
	if got := np.Spec.Disruption.ConsolidationPolicy; got != karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized {
		t.Errorf("consolidationPolicy = %q, want WhenEmptyOrUnderutilized", got)
	}
	if got := np.Spec.Disruption.Budgets; len(got) != 1 || got[0].Nodes != "10%" {
		t.Errorf("budgets = %+v, want one budget of 10%%", got)
	}
	if got := np.Spec.Disruption.ConsolidateAfter.Duration; got == nil || *got != 0 {
		t.Errorf("consolidateAfter = %v, want 0s", got)
	}
}

// TestLoadRejectsBadInput checks every error names the file, the document
// (1-based, non-empty documents), the List item when there is one, and the
// field at fault.
func TestLoadRejectsBadInput(t *testing.T) {
	tests := map[string]struct {
		files map[string]string
		want  []string
	}{
		"misspelt Deployment field": {
			files: map[string]string{"app.yaml": nodePool + "---\n" + strings.Replace(deployment, "replicas:", "replcas:", 1)},
			want:  []string{"app.yaml: document 2", "Deployment default/web", `unknown field "spec.replcas"`},
		},
		"wrong type": {
			files: map[string]string{"app.yaml": strings.Replace(deployment, "replicas: 2", "replicas: two", 1)},
			want:  []string{"app.yaml: document 1", "Deployment default/web", "spec.replicas"},
		},
		"bad quantity": {
			files: map[string]string{"pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    image: i\n    resources: {requests: {cpu: lots}}\n"},
			want:  []string{"pod.yaml: document 1", "Pod default/p", `spec.containers[0].resources.requests.cpu: Invalid value: "lots"`, "quantities must match"},
		},
		"missing kind": {
			files: map[string]string{"x.yaml": "apiVersion: v1\nmetadata: {name: x}\n"},
			want:  []string{"x.yaml: document 1", "kind: Required value"},
		},
		"invalid NodePool: restricted requirement key (CEL)": {
			files: map[string]string{"np.yaml": strings.Replace(nodePool, "karpenter.sh/capacity-type", "kubernetes.io/hostname", 1)},
			want:  []string{"np.yaml: document 1", "NodePool default", "spec.template.spec.requirements[0].key", `label "kubernetes.io/hostname" is restricted`},
		},
		"invalid NodePool: In without values (CEL)": {
			files: map[string]string{"np.yaml": strings.Replace(nodePool, "values: [spot]", "values: []", 1)},
			want:  []string{"np.yaml: document 1", "spec.template.spec.requirements[0].values", "requirements with operator 'In' must have a value defined"},
		},
		"invalid NodePool: weight out of range (schema)": {
			files: map[string]string{"np.yaml": strings.Replace(nodePool, "spec:\n  template:", "spec:\n  weight: 500\n  template:", 1)},
			want:  []string{"np.yaml: document 1", "spec.weight", "should be less than or equal to 100"},
		},
		"invalid NodePool: unknown field": {
			files: map[string]string{"np.yaml": strings.Replace(nodePool, "requirements:", "requirments:", 1)},
			want:  []string{"np.yaml: document 1", `unknown field "spec.template.spec.requirments"`},
		},
		"invalid NodePool: missing nodeClassRef": {
			files: map[string]string{"np.yaml": strings.Replace(nodePool, "      nodeClassRef: {group: karpenter.kwok.sh, kind: KWOKNodeClass, name: default}\n", "", 1)},
			want:  []string{"np.yaml: document 1", "spec.template.spec.nodeClassRef", "Required value"},
		},
		"bad item of a JSON List": {
			files: map[string]string{"pods.json": `{"apiVersion":"v1","kind":"List","items":[
				{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"}]}},
				{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"i","resorces":{}}]}}]}`},
			want: []string{"pods.json: document 1: items[1]", "Pod default/b", `unknown field "spec.containers[0].resorces"`},
		},
		"selector does not match the template": {
			files: map[string]string{"app.yaml": strings.Replace(deployment, "matchLabels: {app: web}", "matchLabels: {app: api}", 1)},
			want:  []string{"app.yaml: document 1", "Deployment default/web", "spec.template.metadata.labels", "`selector` does not match template `labels`"},
		},
		"same object twice": {
			files: map[string]string{"a.yaml": deployment, "b.yaml": deployment},
			want:  []string{"b.yaml: document 1", "Deployment default/web", "defined twice", "a.yaml: document 1"},
		},
		"old apiVersion of a workload": {
			files: map[string]string{"app.yaml": strings.Replace(deployment, "apps/v1", "apps/v1beta1", 1)},
			want:  []string{"app.yaml: document 1", "Deployment default/web", `apiVersion: Unsupported value: "apps/v1beta1": Deployment is served as apps/v1`},
		},
		"old apiVersion of a NodePool": {
			files: map[string]string{"np.yaml": strings.Replace(nodePool, "karpenter.sh/v1", "karpenter.sh/v1beta1", 1)},
			want:  []string{"np.yaml: document 1", "NodePool default", `apiVersion: Unsupported value: "karpenter.sh/v1beta1": NodePool is served as karpenter.sh/v1`},
		},
		"invalid KWOKNodeClass": {
			files: map[string]string{"nc.yaml": "apiVersion: karpenter.kwok.sh/v1alpha1\nkind: KWOKNodeClass\nmetadata: {name: default}\nspec: {nodeRegistrationDelay: soon}\n"},
			want:  []string{"nc.yaml: document 1", "KWOKNodeClass default", "spec.nodeRegistrationDelay", "should match"},
		},
		"YAML syntax": {
			files: map[string]string{"x.yaml": deployment + "---\nkind: Pod\n  bad: [\n"},
			want:  []string{"x.yaml: document 2", "parsing YAML"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			set, err := Load(dir)
			if err == nil {
				_, err = Expand(set)
			}
			if err == nil {
				t.Fatalf("no error, want one containing %q", tc.want)
			}
			var merr *Error
			if !errors.As(err, &merr) {
				t.Errorf("error %T is not a *manifest.Error: %v", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err.Error(), w)
				}
			}
		})
	}
}

func TestLoadWarnsAboutUnknownKindsAndKeepsServices(t *testing.T) {
	dir := writeFiles(t, map[string]string{"all.yaml": deployment + `---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
`})
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "all.yaml")
	want := []string{
		file + ": document 3: skipped example.com/v1 Widget: kind not used by karp",
	}
	if diff := cmp.Diff(want, set.Warnings); diff != "" {
		t.Errorf("warnings (-want,+got):\n%s", diff)
	}
	if len(set.Deployments) != 1 {
		t.Errorf("read %d Deployments, want 1", len(set.Deployments))
	}
	if len(set.Services) != 1 || set.Services[0].Namespace != "default" || set.Services[0].Spec.Selector["app"] != "web" {
		t.Errorf("Services %v, want default/web selecting app=web", set.Services)
	}
}

func TestLoadReadsDirectoriesRecursivelyAndLists(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"a/app.yml":     deployment,
		"a/b/pods.json": `{"apiVersion":"v1","kind":"PodList","items":[{"metadata":{"name":"p1"},"spec":{"containers":[{"name":"c","image":"i"}]}}]}` + "\n" + `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p2","namespace":"ns"},"spec":{"containers":[{"name":"c","image":"i"}]}}`,
		"a/README.md":   "not a manifest",
		"list.yaml":     "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(nodePool, "\n", "\n  "),
		"empty.yaml":    "# nothing\n---\n---\n",
	})
	set, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pods []string
	for _, p := range set.Pods {
		pods = append(pods, p.Namespace+"/"+p.Name)
	}
	if diff := cmp.Diff([]string{"default/p1", "ns/p2"}, pods); diff != "" {
		t.Errorf("pods (-want,+got):\n%s", diff)
	}
	if len(set.Deployments) != 1 || len(set.NodePools) != 1 {
		t.Errorf("read %d Deployments and %d NodePools, want 1 and 1", len(set.Deployments), len(set.NodePools))
	}
	src, ok := set.SourceOf("Pod ns/p2")
	if want := (Source{File: filepath.Join(dir, "a/b/pods.json"), Doc: 2, Item: -1}); !ok || src != want {
		t.Errorf("source of ns/p2 = %v, want %v", src, want)
	}
}

func TestLoadWithoutManifestsIsAnError(t *testing.T) {
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no manifest files") {
		t.Errorf("error = %v, want one saying no manifest files", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("loading a missing file succeeded")
	}
}

func TestLoadFromStdin(t *testing.T) {
	dir := writeFiles(t, map[string]string{"np.yaml": nodePool})
	set, err := LoadFrom(strings.NewReader(deployment), dir, StdinPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.NodePools) != 1 || len(set.Deployments) != 1 {
		t.Fatalf("read %d NodePools and %d Deployments, want 1 and 1", len(set.NodePools), len(set.Deployments))
	}
	if src, _ := set.SourceOf("Deployment default/web"); src.File != "-" || src.Doc != 1 {
		t.Errorf("source = %v, want -: document 1", src)
	}
	if _, err := LoadFrom(strings.NewReader(deployment), StdinPath, StdinPath); err == nil {
		t.Error("reading stdin twice succeeded")
	}
	if _, err := Load(StdinPath); err == nil {
		t.Error("Load without stdin read -")
	}
}
