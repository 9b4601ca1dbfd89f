package garbagecollection_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

var h *operatortest.Harness

func TestMain(m *testing.M) { operatortest.Main(m, &h) }

func setup(t *testing.T) (*fake.CloudProvider, *garbagecollection.Controller) {
	t.Helper()
	h.Reset(t)
	cp := fake.New()
	return cp, garbagecollection.NewController(h.Client, h.APIReader, cp, h.Clock)
}

func collect(t *testing.T, c *garbagecollection.Controller) {
	t.Helper()
	h.Synced(t)
	if err := c.Collect(t.Context()); err != nil {
		t.Fatalf("collecting: %v", err)
	}
}

// leak launches an instance for a NodeClaim that is never stored (a launch
// whose NodeClaim vanished), created at the given time, with its Node.
func leak(t *testing.T, cp *fake.CloudProvider, name string, created time.Time) *corev1.Node {
	t.Helper()
	ghost := test.MakeNodeClaim(name).NodePool("default").Obj()
	ghost.CreationTimestamp = metav1.NewTime(created)
	instance, err := cp.Create(t.Context(), ghost)
	if err != nil {
		t.Fatal(err)
	}
	node := test.MakeNode(name + "-node").ProviderID(instance.Status.ProviderID).Obj()
	node.Finalizers = []string{karpv1.TerminationFinalizer}
	h.Create(t, node)
	return node
}

func TestLeakedInstancesAreDeletedOnceOldEnough(t *testing.T) {
	cp, c := setup(t)
	now := h.Clock.Now()
	old := leak(t, cp, "old-leak", now.Add(-garbagecollection.LeakedInstanceAge-time.Second))
	young := leak(t, cp, "young-leak", now.Add(-garbagecollection.LeakedInstanceAge/2))
	// A claimed instance of any age stays.
	owned := test.MakeNodeClaim("owned").NodePool("default").Obj()
	h.Create(t, owned)
	instance, err := cp.Create(t.Context(), owned)
	if err != nil {
		t.Fatal(err)
	}
	owned.Status.ProviderID = instance.Status.ProviderID
	h.UpdateStatus(t, owned)

	collect(t, c)

	live := map[string]bool{}
	instances, _ := cp.List(t.Context())
	for _, i := range instances {
		live[i.Status.ProviderID] = true
	}
	if live[old.Spec.ProviderID] {
		t.Error("leaked instance older than the threshold survived")
	}
	if !live[young.Spec.ProviderID] {
		t.Error("instance younger than the threshold was deleted")
	}
	if !live[owned.Status.ProviderID] {
		t.Error("instance with a NodeClaim was deleted")
	}
	if h.Get(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: old.Name}}) {
		t.Error("node of the leaked instance survived")
	}
	if !h.Get(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: young.Name}}) {
		t.Error("node of the young instance was deleted")
	}
}

func TestNodeClaimsWhoseInstanceVanishedAreDeleted(t *testing.T) {
	for name, tc := range map[string]struct {
		registered  bool
		nodeReady   bool
		withNode    bool
		wantDeleted bool
	}{
		"registered, node not ready": {registered: true, withNode: true, nodeReady: false, wantDeleted: true},
		"registered, node gone":      {registered: true, withNode: false, wantDeleted: true},
		"registered, node ready":     {registered: true, withNode: true, nodeReady: true, wantDeleted: false},
		"not registered yet":         {registered: false, withNode: false, wantDeleted: false},
	} {
		t.Run(name, func(t *testing.T) {
			_, c := setup(t)
			const providerID = "fake://terminated-outside-karp"
			nc := test.MakeNodeClaim("orphan").NodePool("default").Finalizers(karpv1.TerminationFinalizer).Obj()
			h.Create(t, nc)
			nc.Status.ProviderID = providerID
			nc.StatusConditions().WithClock(h.Clock).SetTrue(karpv1.ConditionTypeLaunched)
			if tc.registered {
				nc.StatusConditions().WithClock(h.Clock).SetTrue(karpv1.ConditionTypeRegistered)
			}
			h.UpdateStatus(t, nc)
			if tc.withNode {
				w := test.MakeNode("orphan-node").ProviderID(providerID)
				if !tc.nodeReady {
					w = w.NotReady()
				}
				node := w.Obj()
				h.Create(t, node)
			}

			collect(t, c)

			got := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
			deleted := !h.Get(t, got) || !got.DeletionTimestamp.IsZero()
			if deleted != tc.wantDeleted {
				t.Errorf("deleted = %v, want %v", deleted, tc.wantDeleted)
			}
		})
	}
}

func TestReconcileSchedulesTheNextPass(t *testing.T) {
	_, c := setup(t)
	h.Synced(t)
	res, err := c.Reconcile(t.Context(), reconcileRequest())
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("RequeueAfter = %s, want a next pass", res.RequeueAfter)
	}
}

func TestLaunchInFlightIsNotALeak(t *testing.T) {
	cp, c := setup(t)
	// The NodeClaim exists but has not recorded the providerID of the
	// instance the provider just launched for it.
	nc := test.MakeNodeClaim("in-flight").NodePool("default").Obj()
	h.Create(t, nc)
	launchedAt := nc.CreationTimestamp.Time
	h.Clock.SetTime(launchedAt.Add(10 * garbagecollection.LeakedInstanceAge))
	if _, err := cp.Create(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	collect(t, c)
	if instances, _ := cp.List(t.Context()); len(instances) != 1 {
		t.Errorf("provider has %d instances, want the in-flight launch kept", len(instances))
	}
}
