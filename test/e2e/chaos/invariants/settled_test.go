package invariants

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// settledClaim creates an initialized NodeClaim of the pool whose
// instance is a kwok Node of the same name (created when withNode).
func settledClaim(t *testing.T, name, pool string, withNode bool, taints ...corev1.Taint) {
	t.Helper()
	nc := test.MakeNodeClaim(name).NodePool(pool).Obj()
	create(t, nc)
	nc.Status.ProviderID = "kwok://" + name
	nc.Status.NodeName = name
	nc.StatusConditions().SetTrue(karpv1.ConditionTypeInitialized)
	if err := env.Client.Status().Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	if withNode {
		readyNode(t, name, "kwok://"+name, taints...)
	}
}

// checkSettled runs CheckSettled and renders what it found about objects
// starting with prefix as "kind object".
func checkSettled(t *testing.T, prefix string) []string {
	t.Helper()
	found, err := CheckSettled(t.Context(), env.Client, KWOKInstances{Client: env.Client}, SettleOptions{Namespaces: []string{prefix}})
	if err != nil {
		t.Fatal(err)
	}
	return violationsOf(found, prefix)
}

// TestCheckSettled builds a settled pool, checks that nothing is found,
// then breaks each promise once.
func TestCheckSettled(t *testing.T) {
	const p = "settle"
	ns := namespace(t, p)
	create(t, test.MakeNodePool(p).ConsolidateAfter(karpv1.NewNillableDuration(30*time.Second)).Obj())
	create(t, test.MakeNodePool(p+"-keep").ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).Obj())

	// 1. Settled: a node running a pod, and an empty node in a pool that
	// never consolidates.
	settledClaim(t, p+"-busy", p, true)
	runningPod(t, podSpec{ns: ns, name: "web", node: p + "-busy"})
	settledClaim(t, p+"-kept", p+"-keep", true)
	if got := checkSettled(t, p); len(got) != 0 {
		t.Fatalf("a settled cluster: found %v", got)
	}

	// 2. Each promise broken once.
	readyNode(t, p+"-leaked", "kwok://"+p+"-leaked")                              // an instance without a NodeClaim
	settledClaim(t, p+"-vanished", p, false)                                      // a NodeClaim whose instance is gone
	settledClaim(t, p+"-empty", p, true)                                          // only a DaemonSet pod left
	settledClaim(t, p+"-tainted", p, true, karpv1.DisruptedNoScheduleTaint)       // disrupted taint, no disruption
	settledClaim(t, p+"-held", p+"-keep", true, karpv1.BatchHoldNoScheduleTaint)  // batch hold never lifted
	runningPod(t, podSpec{ns: ns, name: "on-tainted", node: p + "-tainted"})      // (not empty)
	runningPod(t, podSpec{ns: ns, name: "on-held", node: p + "-held"})            // (not empty)
	runningPod(t, podSpec{ns: ns, name: "pending", pending: true})                // a pod that never ran
	unready := runningPod(t, podSpec{ns: ns, name: "unready", node: p + "-busy"}) // runs, not Ready
	unready.Status.Conditions[0].Status = corev1.ConditionFalse
	if err := env.Client.Status().Update(t.Context(), unready); err != nil {
		t.Fatal(err)
	}
	ds := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds-uid", Controller: ptrTrue()}
	runningPod(t, podSpec{ns: ns, name: "agent", node: p + "-empty", owner: &ds})
	// DaemonSet pods made for one node: for a gone node it is garbage,
	// for a live one a pod that does not run.
	runningPod(t, podSpec{ns: ns, name: "agent-for-gone", owner: &ds, forNode: p + "-gone", pending: true})
	runningPod(t, podSpec{ns: ns, name: "agent-pending", owner: &ds, forNode: p + "-busy", pending: true})
	finished := runningPod(t, podSpec{ns: ns, name: "finished", node: p + "-busy"})
	finished.Status.Phase = corev1.PodSucceeded
	if err := env.Client.Status().Update(t.Context(), finished); err != nil {
		t.Fatal(err)
	}
	launching := test.MakeNodeClaim(p + "-launching").NodePool(p).Obj() // never launched
	create(t, launching)

	want := []string{
		"EmptyNode " + p + "-empty",
		"LeakedInstance kwok://" + p + "-leaked",
		"MissingInstance " + p + "-vanished",
		"NodeClaimNotSettled " + p + "-launching",
		"PodNotRunning " + ns + "/agent-pending",
		"PodNotRunning " + ns + "/pending",
		"PodNotRunning " + ns + "/unready",
		"StuckTaint " + p + "-held",
		"StuckTaint " + p + "-tainted",
	}
	if diff := cmp.Diff(want, checkSettled(t, p)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// TestCheckSettledDuplicateAndSharedInstances feeds CheckSettled
// instances that two NodeClaims claim, and two instances of one NodeClaim.
func TestCheckSettledDuplicateAndSharedInstances(t *testing.T) {
	const p = "dup"
	create(t, test.MakeNodePool(p).ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).Obj())
	settledClaim(t, p+"-a", p, false)
	settledClaim(t, p+"-b", p, false)
	b := &karpv1.NodeClaim{}
	b.Name = p + "-b"
	if err := env.Client.Get(t.Context(), clientKey(b), b); err != nil {
		t.Fatal(err)
	}
	b.Status.ProviderID = "kwok://" + p + "-a" // claims a's instance too
	if err := env.Client.Status().Update(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	instances := fixedInstances{
		instance(p+"-a", "kwok://"+p+"-a"),
		instance(p+"-c", "kwok://"+p+"-c1"),
		instance(p+"-c", "kwok://"+p+"-c2"),
	}
	found, err := CheckSettled(t.Context(), env.Client, instances, SettleOptions{Namespaces: []string{p}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"DuplicateInstance " + p + "-c",
		"LeakedInstance kwok://" + p + "-c1",
		"LeakedInstance kwok://" + p + "-c2",
		"SharedInstance kwok://" + p + "-a",
	}
	if diff := cmp.Diff(want, violationsOf(found, p)); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}
