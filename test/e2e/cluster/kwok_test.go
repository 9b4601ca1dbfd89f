package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

func TestKWOKNodeTurnsReadyAndRunsPod(t *testing.T) {
	f := framework.Current(t)
	node, pod := framework.ExpectNodeReadyAndPodRuns(t, f.Client, "kwok-ready")
	if pod.Status.PodIP == "" {
		t.Errorf("running pod %s has no IP", pod.Name)
	}
	if len(node.Status.Addresses) == 0 {
		t.Errorf("ready node %s has no addresses", node.Name)
	}
}

func TestKWOKLeavesNodesWithoutItsAnnotationAlone(t *testing.T) {
	f := framework.Current(t)
	ctx := t.Context()
	foreign := framework.MakeKWOKNode("not-kwok")
	foreign.Annotations = nil
	if err := f.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	// A managed node created afterwards turning Ready shows kwok has
	// processed the node events; the foreign node must still be untouched.
	framework.ExpectNodeReadyAndPodRuns(t, f.Client, "kwok-managed")
	if err := f.Client.Get(ctx, client.ObjectKeyFromObject(foreign), foreign); err != nil {
		t.Fatal(err)
	}
	for _, c := range foreign.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			t.Fatalf("kwok made node %s Ready although it lacks %s", foreign.Name, localcluster.KWOKNodeAnnotationKey)
		}
	}
}

// The node lifecycle controller must run: it adds node.kubernetes.io/
// not-ready to a node reporting Ready=False and lifts it once the node is
// Ready. The node is not kwok's, so only the test writes its status.
func TestNodeLifecycleControllerTaintsAndLiftsNotReady(t *testing.T) {
	f := framework.Current(t)
	ctx := t.Context()
	node := framework.MakeKWOKNode("lifecycle")
	node.Annotations = nil
	if err := f.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	setReady := func(status corev1.ConditionStatus) {
		t.Helper()
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := f.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
				return err
			}
			now := metav1.Now()
			node.Status.Conditions = []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: status, Reason: "Test", LastHeartbeatTime: now, LastTransitionTime: now,
			}}
			return f.Client.Status().Update(ctx, node)
		})
		if err != nil {
			t.Fatalf("setting Ready=%s: %v", status, err)
		}
	}
	taints := func(ctx context.Context) (bool, string) {
		if err := f.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, err.Error()
		}
		for _, taint := range node.Spec.Taints {
			if taint.Key == corev1.TaintNodeNotReady {
				return true, ""
			}
		}
		return false, ""
	}
	setReady(corev1.ConditionFalse)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		tainted, errText := taints(ctx)
		return tainted, fmt.Sprintf("Ready=False node lacks the not-ready taint (taints %v) %s", node.Spec.Taints, errText)
	})
	setReady(corev1.ConditionTrue)
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		tainted, errText := taints(ctx)
		return !tainted && errText == "", fmt.Sprintf("Ready=True node keeps the not-ready taint (taints %v) %s", node.Spec.Taints, errText)
	})
	_ = f.Client.Delete(ctx, node)
}

func TestExampleNodePoolsApplyAndList(t *testing.T) {
	f := framework.Current(t)
	ctx := t.Context()
	files, err := filepath.Glob(filepath.Join(fixtures.Example(t, ""), "nodepool*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no NodePool examples found: %v", err)
	}
	var applied []string
	if err := localcluster.Apply(ctx, f.Config, files, writerFunc(func(p []byte) { applied = append(applied, string(p)) })); err != nil {
		t.Fatalf("applying %v: %v", files, err)
	}
	objs, err := localcluster.ReadManifests(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != len(objs) {
		t.Errorf("applied %d objects, the files hold %d", len(applied), len(objs))
	}
	var pools karpv1.NodePoolList
	if err := f.Client.List(ctx, &pools); err != nil {
		t.Fatal(err)
	}
	var classes kwokv1alpha1.KWOKNodeClassList
	if err := f.Client.List(ctx, &classes); err != nil {
		t.Fatal(err)
	}
	wantPools := 0
	for _, o := range objs {
		if o.GetKind() == "NodePool" {
			wantPools++
		}
	}
	if len(pools.Items) != wantPools || len(classes.Items) == 0 {
		t.Errorf("cluster has %d NodePools and %d KWOKNodeClasses, want %d and at least 1", len(pools.Items), len(classes.Items), wantPools)
	}
	// Applying again is a no-op, not a conflict.
	if err := localcluster.Apply(ctx, f.Config, files, writerFunc(func([]byte) {})); err != nil {
		t.Fatalf("re-applying: %v", err)
	}
	_ = f.Client.DeleteAllOf(ctx, &karpv1.NodePool{})
}

type writerFunc func(p []byte)

func (w writerFunc) Write(p []byte) (int, error) { w(p); return len(p), nil }
