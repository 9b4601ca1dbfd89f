package disruption

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok/controllers/interruption"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// TestInterruptionReplacesTheNodeBeforeTheNoticeEnds delivers a spot
// interruption notice with `karp interrupt NODE` and checks, by sampling
// the cluster, that the pod runs on a new node and the interrupted node is
// gone before the notice's reclaim time, and that the replacement uses a
// different offering. Nodes take 5 s to register: the notice leaves time
// for that, so the replacement is initialized before the drain evicts the
// pod, which never waits for a launch (--replace-first).
func TestInterruptionReplacesTheNodeBeforeTheNoticeEnds(t *testing.T) {
	const name = "e2e-interruption"
	pool := test.MakeNodePool(name).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
		Obj()
	f, _ := framework.RunPool(t, name, pool)
	cl := f.Client
	nodeClass := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	framework.Mutate(t, cl, nodeClass, func() {
		nodeClass.Spec.NodeRegistrationDelay = &metav1.Duration{Duration: 5 * time.Second}
	})
	framework.Create(t, cl, framework.Deployment(name, name, name, 1, "1"))
	claims := framework.WaitRunningClaims(t, cl, name, 1)
	if len(claims) != 1 {
		t.Fatalf("pod runs under %d NodeClaims, want 1", len(claims))
	}
	var victim karpv1.NodeClaim
	for n := range claims {
		victim = framework.PoolNodeClaimsByName(t.Context(), cl, name)[n]
	}
	node := victim.Status.NodeName
	watch := framework.WatchAvailability(t, f, name)

	out, err := exec.Command(framework.KarpBinary(t), "interrupt", "--kubeconfig", f.Cluster.Kubeconfig, node).CombinedOutput()
	if err != nil {
		t.Fatalf("karp interrupt: %v\n%s", err, out)
	}
	got := &corev1.Node{}
	if err := cl.Get(t.Context(), types.NamespacedName{Name: node}, got); err != nil {
		t.Fatal(err)
	}
	reclaimAt, err := time.Parse(time.RFC3339, got.Annotations[interruption.NoticeAnnotationKey])
	if err != nil {
		t.Fatalf("notice annotation: %v", err)
	}

	framework.Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		running := framework.AvailablePods(ctx, cl, name, nil)
		onNew := len(running) == 1 && running[0].Spec.NodeName != node
		nodeGone := apierrors.IsNotFound(cl.Get(ctx, types.NamespacedName{Name: node}, &corev1.Node{}))
		return onNew && nodeGone, fmt.Sprintf("pod on a new node %v, interrupted node gone %v", onNew, nodeGone)
	})
	if now := time.Now(); !now.Before(reclaimAt) {
		t.Errorf("the node was replaced only at %s, after the notice ended at %s", now.UTC().Format(time.RFC3339), reclaimAt.UTC().Format(time.RFC3339))
	}
	if late := watch.WaitedForLaunch(t.Context(), cl, name); len(late) > 0 {
		t.Errorf("pods waited for their node to launch: %v", late)
	}
	if got := len(watch.NewPods()); got != 1 {
		t.Errorf("%d pods created after the notice, want the evicted pod's one replacement", got)
	}
	offering := func(nc karpv1.NodeClaim) string {
		return nc.Labels[corev1.LabelInstanceTypeStable] + "/" + nc.Labels[corev1.LabelTopologyZone] + "/" + nc.Labels[karpv1.CapacityTypeLabelKey]
	}
	for _, nc := range framework.PoolNodeClaimsByName(t.Context(), cl, name) {
		if nc.Name != victim.Name && offering(nc) == offering(victim) {
			t.Errorf("replacement %s uses the interrupted offering %s", nc.Name, offering(nc))
		}
	}
}
