package kwok

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestRestartResumesDelayedLaunches: a controller process dies while an
// instance waits out its registration delay; the next process's provider
// finishes that launch instead of leaving the NodeClaim without a Node.
func TestRestartResumesDelayedLaunches(t *testing.T) {
	clk := clocktesting.NewFakeClock(stamp)
	before := newProvider(t, WithClock(clk))
	nodeClass := readyNodeClass(t, func(w *test.KWOKNodeClassWrapper) { w.NodeRegistrationDelay(time.Minute) })
	nodeClaim := newNodeClaim("resumed", nodeClass.Name)
	nodeClaim.UID = ""
	if err := env.Client.Create(t.Context(), nodeClaim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.WithoutCancel(t.Context()), nodeClaim) })
	launched, err := before.Create(t.Context(), nodeClaim)
	if err != nil {
		t.Fatal(err)
	}
	// The lifecycle controller records the launch, as it would.
	nodeClaim.Labels = launched.Labels
	if err := env.Client.Update(t.Context(), nodeClaim); err != nil {
		t.Fatal(err)
	}
	nodeClaim.Status = launched.Status
	nodeClaim.Status.Conditions = []metav1.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionTrue,
		Reason: "Launched", LastTransitionTime: metav1.NewTime(stamp), ObservedGeneration: nodeClaim.Generation}}
	if err := env.Client.Status().Update(t.Context(), nodeClaim); err != nil {
		t.Fatal(err)
	}
	// 1. The process dies 20s into the minute: its pending launch is gone.
	clk.Step(20 * time.Second)
	before.Close()
	if _, err := getNode(t, "resumed"); !apierrors.IsNotFound(err) {
		t.Fatalf("the Node exists before its delay ran out (get: %v)", err)
	}
	// 2. The next process's provider lists the instance as pending...
	after := newProvider(t, WithClock(clk))
	if countListed(t, after, launched.Status.ProviderID) != 1 {
		t.Fatal("List after the restart misses the launched instance")
	}
	// 3. ...and registers it when the rest of the delay (40s) has passed.
	awaitTimer(t, clk)
	clk.Step(39 * time.Second)
	if _, err := getNode(t, "resumed"); !apierrors.IsNotFound(err) {
		t.Fatalf("the resumed Node appeared early (get: %v)", err)
	}
	clk.Step(time.Second)
	awaitNode(t, "resumed")
	node, err := getNode(t, "resumed")
	if err != nil {
		t.Fatal(err)
	}
	if node.Spec.ProviderID != launched.Status.ProviderID || node.Annotations[NodeClaimUIDAnnotationKey] != string(nodeClaim.UID) {
		t.Errorf("resumed Node: providerID %q, nodeclaim UID %q; want %q and %q", node.Spec.ProviderID,
			node.Annotations[NodeClaimUIDAnnotationKey], launched.Status.ProviderID, nodeClaim.UID)
	}
}
