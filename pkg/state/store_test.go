package state_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func meta(namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"v": "1"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}
}

// keys is each object's namespace/name (or name), with "+managed" when
// it still carries managed fields.
func keys[T interface {
	GetNamespace() string
	GetName() string
	GetManagedFields() []metav1.ManagedFieldsEntry
}](objs []T) []string {
	var out []string
	for _, o := range objs {
		k := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}.String()
		if o.GetNamespace() == "" {
			k = o.GetName()
		}
		if len(o.GetManagedFields()) > 0 {
			k += "+managed"
		}
		out = append(out, k)
	}
	return out
}

// The per-kind accessors record copies without managed fields, replace by
// key, forget on delete, and list copies in key order.
func TestKindAccessorsRecordListAndForget(t *testing.T) {
	cluster := state.NewCluster(clocktesting.NewFakeClock(time.Unix(0, 0)), nil)

	ds := &appsv1.DaemonSet{ObjectMeta: meta("kube-system", "proxy")}
	cluster.UpdateDaemonSet(ds)
	cluster.UpdateDaemonSet(&appsv1.DaemonSet{ObjectMeta: meta("default", "agent")})
	cluster.UpdateDaemonSet(&appsv1.DaemonSet{ObjectMeta: meta("kube-system", "agent")})
	ds.Labels["v"] = "changed by the caller"
	cluster.DeleteDaemonSet(types.NamespacedName{Namespace: "kube-system", Name: "agent"})
	cluster.DeleteDaemonSet(types.NamespacedName{Namespace: "kube-system", Name: "never-recorded"})

	for _, name := range []string{"b", "a", "c"} {
		np := test.MakeNodePool(name).Obj()
		np.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
		cluster.UpdateNodePool(np)
	}
	cluster.UpdateNodePool(test.MakeNodePool("a").Weight(7).Obj())
	cluster.DeleteNodePool("c")

	cluster.UpdatePDB(&policyv1.PodDisruptionBudget{ObjectMeta: meta("web", "pdb")})
	cluster.UpdatePDB(&policyv1.PodDisruptionBudget{ObjectMeta: meta("api", "pdb")})
	cluster.DeletePDB(types.NamespacedName{Namespace: "web", Name: "pdb"})

	daemonSets := cluster.DaemonSets()
	if diff := cmp.Diff([]string{"default/agent", "kube-system/proxy"}, keys(daemonSets)); diff != "" {
		t.Errorf("DaemonSets (-want,+got):\n%s", diff)
	}
	if got := daemonSets[1].Labels["v"]; got != "1" {
		t.Errorf("recorded DaemonSet label v = %q, want the value at update time", got)
	}
	pools := cluster.NodePools()
	if diff := cmp.Diff([]string{"a", "b"}, keys(pools)); diff != "" {
		t.Errorf("NodePools (-want,+got):\n%s", diff)
	}
	if pools[0].Spec.Weight == nil || *pools[0].Spec.Weight != 7 {
		t.Errorf("NodePool a weight = %v, want 7 from the later update", pools[0].Spec.Weight)
	}
	if diff := cmp.Diff([]string{"api/pdb"}, keys(cluster.PDBs())); diff != "" {
		t.Errorf("PDBs (-want,+got):\n%s", diff)
	}

	// Lists are copies: changing one changes neither the view nor the next list.
	daemonSets[0].Labels["v"] = "changed by a reader"
	pools[0].Name = "renamed"
	if got := cluster.DaemonSets()[0].Labels["v"]; got != "1" {
		t.Errorf("after a reader changed its list, DaemonSet label v = %q, want 1", got)
	}
	if got := keys(cluster.NodePools()); got[0] != "a" {
		t.Errorf("after a reader changed its list, NodePools = %v, want a first", got)
	}
}
