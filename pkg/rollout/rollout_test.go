package rollout

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/karp-autoscaler/karp/pkg/test"
)

// objects is a small namespace: a Deployment "web" of 4 with two
// ReplicaSets (a rollout in progress), a ReplicaSet "solo" of 8 without a
// Deployment, a ReplicaSet "orphan" whose Deployment is gone, a
// StatefulSet "db" of 3, a ReplicaSet whose name a newer object took, and
// their pods.
type objects struct {
	objs []client.Object
	pods map[string]*corev1.Pod
}

func (o *objects) add(objs ...client.Object) { o.objs = append(o.objs, objs...) }

// pod adds a pod of owner (kind) with the template labels, Ready or not.
func (o *objects) pod(name string, owner metav1.Object, kind string, labels map[string]string, ready bool) {
	p := test.MakePod(name).Obj()
	test.ControlledBy(p, owner, kind, labels)
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	o.pods[name] = p
	o.add(p)
}

func withUID[T metav1.Object](obj T, uid string) T {
	obj.SetUID(types.UID(uid))
	return obj
}

func cluster() *objects {
	o := &objects{pods: map[string]*corev1.Pod{}}
	web := withUID(test.MakeDeployment("web").Replicas(4).Obj(), "web")
	oldRS, newRS := withUID(test.ReplicaSetOf(web, "old"), "web-old"), withUID(test.ReplicaSetOf(web, "new"), "web-new")
	o.add(web, oldRS, newRS)
	o.pod("web-old-1", oldRS, "ReplicaSet", oldRS.Spec.Template.Labels, true)
	o.pod("web-old-2", oldRS, "ReplicaSet", oldRS.Spec.Template.Labels, true)
	o.pod("web-new-1", newRS, "ReplicaSet", newRS.Spec.Template.Labels, true)
	o.pod("web-new-2", newRS, "ReplicaSet", newRS.Spec.Template.Labels, false)

	solo := withUID(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "solo", Namespace: "default"},
		Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(8)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "solo"}}}}, "solo")
	o.add(solo)
	for i := range 7 {
		o.pod(fmt.Sprintf("solo-%d", i), solo, "ReplicaSet", map[string]string{"app": "solo"}, true)
	}

	gone := withUID(test.MakeDeployment("gone").Replicas(4).Obj(), "gone")
	orphan := withUID(test.ReplicaSetOf(gone, "x"), "orphan")
	o.add(orphan)
	o.pod("orphan-1", orphan, "ReplicaSet", orphan.Spec.Template.Labels, true)

	db := withUID(test.MakeStatefulSet("db").Replicas(3).Obj(), "db")
	o.add(db)
	o.pod("db-0", db, "StatefulSet", db.Spec.Template.Labels, true)
	o.pod("db-1", db, "StatefulSet", db.Spec.Template.Labels, true)

	// A pod whose ReplicaSet's name now belongs to another object.
	stale := withUID(&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "solo", Namespace: "default"}}, "stale")
	o.pod("stale-1", stale, "ReplicaSet", map[string]string{"app": "solo"}, true)
	// A Job's pod has no rollout budget.
	job := test.MakePod("job-1").Owner("Job", "report", "job").Obj()
	o.pods["job-1"] = job
	o.add(job)
	return o
}

func newClient(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
}

// TestViewFindsEachPodsBudget resolves each pod's controller (a
// Deployment through its ReplicaSets, whatever the revision; a ReplicaSet
// alone or orphaned; a StatefulSet) and counts its pods, alike whether the
// View reads few controllers (label-selected lists) or many (the
// namespace's pods grouped once).
func TestViewFindsEachPodsBudget(t *testing.T) {
	o := cluster()
	want := map[string]string{
		"web-old-1": "Deployment default/web has 1 of 4 replicas unavailable (maxUnavailable 1)",
		"web-new-2": "Deployment default/web has 1 of 4 replicas unavailable (maxUnavailable 1)",
		"solo-3":    "ReplicaSet default/solo has 1 of 8 replicas unavailable (maxUnavailable 2)",
		"orphan-1":  "ReplicaSet default/gone-x has 3 of 4 replicas unavailable (maxUnavailable 1)",
		"db-0":      "StatefulSet default/db has 1 of 3 replicas unavailable (maxUnavailable 1)",
		"stale-1":   "<none>",
		"job-1":     "<none>",
	}
	order := []string{"web-old-1", "web-new-2", "solo-3", "orphan-1", "db-0", "stale-1", "job-1"}
	for name, lookups := range map[string][]string{
		"one controller per view": nil,
		"many in one view":        order,
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient(o.objs...)
			shared := NewView(c, nil)
			for _, pod := range order {
				v := shared
				if lookups == nil {
					v = NewView(c, nil)
				}
				b, err := v.Budget(t.Context(), o.pods[pod])
				if err != nil {
					t.Fatal(err)
				}
				got := "<none>"
				if b != nil {
					got = b.String()
				}
				if got != want[pod] {
					t.Errorf("budget of %s = %q, want %q", pod, got, want[pod])
				}
			}
			if lookups != nil && shared.podsByOwner["default"] == nil {
				t.Error("the namespace's pods were never grouped")
			}
		})
	}
}

// TestViewCountsPodsBeingEvicted: a pod whose eviction was just granted
// counts as unavailable, so the next Ready pod is held.
func TestViewCountsPodsBeingEvicted(t *testing.T) {
	o := cluster()
	c := newClient(o.objs...)
	b, err := NewView(c, sets.New(o.pods["db-0"].UID)).Budget(t.Context(), o.pods["db-1"])
	if err != nil {
		t.Fatal(err)
	}
	if b.Unavailable != 2 || b.Admits(o.pods["db-1"]) {
		t.Errorf("budget %s admits db-1 = %v, want 2 unavailable and db-1 held", b, b.Admits(o.pods["db-1"]))
	}
}

// TestCoveredByPDB: a PDB of the pod's namespace whose selector matches
// covers it; an empty selector covers every pod, a missing one none.
func TestCoveredByPDB(t *testing.T) {
	pod := test.MakePod("p").Label("app", "web").Obj()
	pdb := func(name, ns string, sel *metav1.LabelSelector) *policyv1.PodDisruptionBudget {
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: policyv1.PodDisruptionBudgetSpec{Selector: sel}}
	}
	for name, tc := range map[string]struct {
		pdb  *policyv1.PodDisruptionBudget
		want bool
	}{
		"matching selector":   {pdb("a", "default", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}), true},
		"other selector":      {pdb("a", "default", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}), false},
		"empty selector":      {pdb("a", "default", &metav1.LabelSelector{}), true},
		"no selector":         {pdb("a", "default", nil), false},
		"another namespace's": {pdb("a", "other", &metav1.LabelSelector{}), false},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := CoveredByPDB(t.Context(), newClient(tc.pdb), pod)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("covered = %v, want %v", got, tc.want)
			}
		})
	}
}
