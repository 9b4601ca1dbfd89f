package finalized_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/finalized"
	"github.com/karp-autoscaler/karp/pkg/test"
)

const otherFinalizer = "example.com/audit"

// controllerFor returns the controller of the kind.
func controllerFor(t *testing.T, kind string) *finalized.Controller {
	t.Helper()
	for _, c := range finalized.NewControllers(h.Client, h.Recorder) {
		if c.Name() == kind+".finalized" {
			return c
		}
	}
	t.Fatalf("no %s controller", kind)
	return nil
}

func reconcileName(t *testing.T, c *finalized.Controller, name string) {
	t.Helper()
	h.Synced(t)
	if _, err := c.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// finalizedNotes returns the notes of the Normal Finalized events about
// the object of kind, name and uid.
func finalizedNotes(t *testing.T, kind, name string, uid types.UID) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := h.Env.Client.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Reason == finalized.ReasonFinalized && e.Regarding.Kind == kind && e.Regarding.Name == name && e.Regarding.UID == uid &&
			e.Type == corev1.EventTypeNormal {
			out = append(out, e.Note)
		}
	}
	slices.Sort(out)
	return out
}

func waitForNotes(t *testing.T, kind, name string, uid types.UID, want ...string) {
	t.Helper()
	slices.Sort(want)
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return slices.Equal(finalizedNotes(t, kind, name, uid), want), nil
	})
	if err != nil {
		t.Fatalf("Finalized notes on %s %s: %q, want %q", kind, name, finalizedNotes(t, kind, name, uid), want)
	}
}

func setFinalizers(t *testing.T, obj client.Object, finalizers ...string) {
	t.Helper()
	h.Get(t, obj)
	obj.SetFinalizers(finalizers)
	if err := h.Env.Client.Update(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
}

// Each finalizer that leaves a deleting NodeClaim is reported on it: one
// while the NodeClaim stays, the last one once the API server deleted it.
func TestFinalizersLeavingANodeClaimAreReported(t *testing.T) {
	h.Reset(t)
	c := controllerFor(t, "nodeclaim")
	nc := test.MakeNodeClaim("claim").Finalizers(karpv1.TerminationFinalizer, otherFinalizer).Obj()
	h.Create(t, nc)
	reconcileName(t, c, nc.Name)
	if err := h.Env.Client.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	reconcileName(t, c, nc.Name)

	setFinalizers(t, nc, karpv1.TerminationFinalizer)
	reconcileName(t, c, nc.Name)
	waitForNotes(t, "NodeClaim", nc.Name, nc.UID, "Finalized "+otherFinalizer)

	setFinalizers(t, nc)
	if h.Get(t, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}) {
		t.Fatal("nodeclaim still there without finalizers")
	}
	reconcileName(t, c, nc.Name)
	waitForNotes(t, "NodeClaim", nc.Name, nc.UID, "Finalized "+otherFinalizer, "Finalized "+karpv1.TerminationFinalizer)
}

// A Node released by termination reports karp's finalizer on the Node.
func TestTerminationFinalizerLeavingANodeIsReported(t *testing.T) {
	h.Reset(t)
	c := controllerFor(t, "node")
	node := test.MakeNode("node-a").Obj()
	node.Finalizers = []string{karpv1.TerminationFinalizer}
	h.Create(t, node)
	reconcileName(t, c, node.Name)
	if err := h.Env.Client.Delete(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	setFinalizers(t, node)
	reconcileName(t, c, node.Name)
	waitForNotes(t, "Node", node.Name, node.UID, "Finalized "+karpv1.TerminationFinalizer)
}
