package manifest

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func expand(t *testing.T, files map[string]string) *Cluster {
	t.Helper()
	set, err := Load(writeFiles(t, files))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Expand(set)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func TestExpandDeploymentLikeItsController(t *testing.T) {
	c := expand(t, map[string]string{"d.yaml": deployment})
	if len(c.Pending) != 2 {
		t.Fatalf("got %d pods, want 2", len(c.Pending))
	}
	nameRE := regexp.MustCompile(`^web-([bcdfghjklmnpqrstvwxz2456789]{6,10})-[bcdfghjklmnpqrstvwxz2456789]{5}$`)
	for _, p := range c.Pending {
		m := nameRE.FindStringSubmatch(p.Name)
		if m == nil {
			t.Fatalf("pod name %q is not <deployment>-<hash>-<suffix>", p.Name)
		}
		if got := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; got != m[1] {
			t.Errorf("pod-template-hash label = %q, want the name's hash %q", got, m[1])
		}
		if p.Labels["app"] != "web" || p.Namespace != "default" {
			t.Errorf("labels %v namespace %q, want app=web in default", p.Labels, p.Namespace)
		}
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.Kind != "ReplicaSet" || ref.Name != "web-"+m[1] || ref.UID == "" {
			t.Errorf("controller ref = %+v, want ReplicaSet web-%s with a UID", ref, m[1])
		}
		if p.UID == "" || p.Spec.Priority == nil || *p.Spec.Priority != 0 {
			t.Errorf("uid %q priority %v, want a UID and priority 0", p.UID, p.Spec.Priority)
		}
	}
	if c.Pending[0].Name == c.Pending[1].Name {
		t.Errorf("both pods are named %s", c.Pending[0].Name)
	}
	again := expand(t, map[string]string{"other-name.yaml": deployment})
	if diff := cmp.Diff(names(c.Pending), names(again.Pending)); diff != "" {
		t.Errorf("names are not deterministic (-first,+second):\n%s", diff)
	}
}

func TestExpandWorkloads(t *testing.T) {
	const sts = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: data}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: i}]}
`
	const job = `apiVersion: batch/v1
kind: Job
metadata: {name: etl}
spec:
  parallelism: 5
  completions: 3
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: i}]}
`
	const indexed = `apiVersion: batch/v1
kind: Job
metadata: {name: shard}
spec:
  parallelism: 2
  completionMode: Indexed
  completions: 4
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: i}]}
`
	const suspended = `apiVersion: batch/v1
kind: Job
metadata: {name: later}
spec:
  suspend: true
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: i}]}
`
	const rs = `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: cache}
spec:
  replicas: 2
  selector: {matchLabels: {app: cache}}
  template:
    metadata: {labels: {app: cache}}
    spec: {containers: [{name: c, image: i}]}
`
	c := expand(t, map[string]string{"w.yaml": sts + "---\n" + job + "---\n" + indexed + "---\n" + suspended + "---\n" + rs})
	byOwner := map[string][]*corev1.Pod{}
	for _, p := range c.Pending {
		ref := metav1.GetControllerOf(p)
		byOwner[ref.Kind+"/"+ref.Name] = append(byOwner[ref.Kind+"/"+ref.Name], p)
	}
	if diff := cmp.Diff([]string{"data/db-0", "data/db-1", "data/db-2"}, names(byOwner["StatefulSet/db"])); diff != "" {
		t.Errorf("StatefulSet pods (-want,+got):\n%s", diff)
	}
	for i, p := range byOwner["StatefulSet/db"] {
		if p.Labels[appsv1.StatefulSetPodNameLabel] != p.Name || p.Labels[appsv1.PodIndexLabel] != []string{"0", "1", "2"}[i] || p.Spec.Hostname != p.Name {
			t.Errorf("StatefulSet pod %s labels %v hostname %q", p.Name, p.Labels, p.Spec.Hostname)
		}
	}
	if got := len(byOwner["Job/etl"]); got != 3 {
		t.Errorf("Job etl has %d pods, want min(parallelism 5, completions 3) = 3", got)
	}
	for _, p := range byOwner["Job/etl"] {
		if !strings.HasPrefix(p.Name, "etl-") || len(p.Name) != len("etl-")+5 || p.Labels[batchv1.JobNameLabel] != "etl" || p.Labels[batchv1.ControllerUidLabel] == "" {
			t.Errorf("Job pod %s labels %v", p.Name, p.Labels)
		}
	}
	var idx []string
	for _, p := range byOwner["Job/shard"] {
		idx = append(idx, p.Labels[batchv1.JobCompletionIndexAnnotation])
		if !strings.HasPrefix(p.Name, "shard-"+p.Labels[batchv1.JobCompletionIndexAnnotation]+"-") {
			t.Errorf("indexed Job pod %s is not shard-<index>-<suffix>", p.Name)
		}
	}
	if diff := cmp.Diff([]string{"0", "1"}, idx); diff != "" {
		t.Errorf("indexed Job completion indexes (-want,+got):\n%s", diff)
	}
	if got := len(byOwner["Job/later"]); got != 0 {
		t.Errorf("suspended Job has %d pods, want 0", got)
	}
	for _, p := range byOwner["ReplicaSet/cache"] {
		if !regexp.MustCompile(`^cache-[bcdfghjklmnpqrstvwxz2456789]{5}$`).MatchString(p.Name) {
			t.Errorf("ReplicaSet pod name %q is not <rs>-<suffix>", p.Name)
		}
	}
	if got := len(byOwner["ReplicaSet/cache"]); got != 2 {
		t.Errorf("ReplicaSet has %d pods, want 2", got)
	}
}

func TestExpandPriorities(t *testing.T) {
	const classes = `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
preemptionPolicy: Never
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: normal}
value: 10
globalDefault: true
`
	pod := func(name, class string) string {
		s := "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec:\n  containers: [{name: c, image: i}]\n"
		if class != "" {
			s += "  priorityClassName: " + class + "\n"
		}
		return s
	}
	c := expand(t, map[string]string{"p.yaml": classes + "---\n" + pod("a", "high") + "---\n" + pod("b", "") + "---\n" +
		pod("c", "system-node-critical") + "---\n" + pod("d", "missing")})
	got := map[string]int32{}
	for _, p := range c.Pending {
		got[p.Name] = *p.Spec.Priority
	}
	if diff := cmp.Diff(map[string]int32{"a": 1000, "b": 10, "c": 2000001000, "d": 0}, got); diff != "" {
		t.Errorf("priorities (-want,+got):\n%s", diff)
	}
	if p := c.Pending[0]; p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("preemptionPolicy = %v, want Never from the class", p.Spec.PreemptionPolicy)
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], `PriorityClass "missing" is not among the manifests`) {
		t.Errorf("warnings = %q, want one about the missing class", c.Warnings)
	}
}

func TestExpandExistingNodesAndOwnedPods(t *testing.T) {
	const node = `apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
status:
  capacity: {cpu: "4", memory: 16Gi, pods: "110"}
  allocatable: {cpu: "3900m", memory: 15Gi, pods: "110"}
`
	const rs = `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-abc, uid: rs-uid}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: i}]}
`
	pod := func(name, node, ownerKind, phase string) string {
		s := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  labels: {app: web}\n"
		if ownerKind != "" {
			s += "  ownerReferences: [{apiVersion: apps/v1, kind: " + ownerKind + ", name: web-abc, uid: rs-uid, controller: true}]\n"
		}
		s += "spec:\n  containers: [{name: c, image: i}]\n"
		if node != "" {
			s += "  nodeName: " + node + "\n"
		}
		if phase != "" {
			s += "status: {phase: " + phase + "}\n"
		}
		return s
	}
	c := expand(t, map[string]string{"c.yaml": node + "---\n" + rs + "---\n" +
		pod("web-abc-bound", "n1", "ReplicaSet", "Running") + "---\n" +
		pod("done", "", "", "Succeeded") + "---\n" +
		pod("ds-pod", "", "DaemonSet", "") + "---\n" +
		pod("elsewhere", "n9", "", "Running")})
	if len(c.Nodes) != 1 || len(c.Nodes[0].Pods) != 1 || c.Nodes[0].Pods[0].Name != "web-abc-bound" {
		t.Fatalf("nodes = %+v, want n1 holding web-abc-bound", c.Nodes)
	}
	// The ReplicaSet wants 3 and owns 1 already: 2 more pods.
	if got := len(c.Pending); got != 2 {
		t.Errorf("pending = %v, want the 2 pods the ReplicaSet is missing", names(c.Pending))
	}
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], `bound to node "n9"`) {
		t.Errorf("warnings = %q, want one about the pod on an unknown node", c.Warnings)
	}
}

func TestExpandDeploymentDefersToItsReplicaSet(t *testing.T) {
	const rs = `apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web-5d8f
  ownerReferences: [{apiVersion: apps/v1, kind: Deployment, name: web, uid: d-uid, controller: true}]
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: i}]}
`
	c := expand(t, map[string]string{"d.yaml": deployment + "---\n" + rs})
	if len(c.Pending) != 1 || !strings.HasPrefix(c.Pending[0].Name, "web-5d8f-") {
		t.Errorf("pending = %v, want the ReplicaSet's one pod only", names(c.Pending))
	}
}
