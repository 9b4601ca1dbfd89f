package kwok

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

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
	nodeClaim, launched := launchedNodeClaim(t, before, "resumed", nodeClass.Name)
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
	expectStillWaiting(t, clk, "a second before the resumed delay")
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

// TestListDoesNotResumeALaunchThisProcessFinished: the garbage collector
// lists instances every few seconds, from a Node cache that in a large
// scale-up runs seconds behind. A NodeClaim this process launched moments
// ago, whose Node the cache does not show yet, is not a launch left
// waiting by a previous process: List must not create its Node again.
func TestListDoesNotResumeALaunchThisProcessFinished(t *testing.T) {
	nodeClass := readyNodeClass(t, nil)
	creates := 0
	lagging := interceptor.NewClient(noWatch{env.Client}, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.NodeList); ok {
				return nil // the cache has not seen any Node yet
			}
			return c.List(ctx, list, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Node); ok {
				creates++
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	provider := newProviderOn(t, lagging)
	launchedNodeClaim(t, provider, "just-launched", nodeClass.Name)
	if _, err := provider.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	provider.Close() // waits for any launch List started
	if creates != 1 {
		t.Errorf("%d Node creates, want 1: List resumed a launch this process had finished", creates)
	}
}

// noWatch lets interceptor wrap a client without Watch.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported")
}

// TestCreateAgainBeforeTheCacheHasTheNode: a retried launch whose Node
// exists but is not in the cache yet gets an error to retry on, not an
// empty result (the lifecycle would have nothing to record).
func TestCreateAgainBeforeTheCacheHasTheNode(t *testing.T) {
	nodeClass := readyNodeClass(t, nil)
	lagging := interceptor.NewClient(noWatch{env.Client}, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Node); ok {
				return apierrors.NewNotFound(corev1.Resource("nodes"), key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	provider := newProviderOn(t, lagging)
	nodeClaim := newNodeClaim("created-twice", nodeClass.Name)
	if _, err := provider.Create(t.Context(), nodeClaim); err != nil {
		t.Fatal(err)
	}
	again, err := provider.Create(t.Context(), nodeClaim)
	if err == nil || again != nil {
		t.Errorf("second Create: %v, %v; want no instance and an error to retry on", again, err)
	}
}

// launchedNodeClaim creates a NodeClaim, launches it with the provider and
// records the launch on it as the lifecycle controller would (labels,
// status, Launched at stamp). It is deleted when the test ends.
func launchedNodeClaim(t *testing.T, provider *CloudProvider, name, nodeClass string) (*karpv1.NodeClaim, *karpv1.NodeClaim) {
	t.Helper()
	nodeClaim := newNodeClaim(name, nodeClass)
	nodeClaim.UID = ""
	if err := env.Client.Create(t.Context(), nodeClaim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.WithoutCancel(t.Context()), nodeClaim) })
	launched, err := provider.Create(t.Context(), nodeClaim)
	if err != nil {
		t.Fatal(err)
	}
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
	return nodeClaim, launched
}
