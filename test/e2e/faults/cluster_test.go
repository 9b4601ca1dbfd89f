package faults

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// A killed and restarted kwok takes its Nodes back: they stay Ready, their
// leases are renewed again by the new process, and a pod bound after the
// restart runs.
func TestKWOKRestartKeepsNodesReady(t *testing.T) {
	f := framework.Current(t)
	cl := f.Client
	ctx := t.Context()
	const name = "faults-kwok-restart"
	framework.Create(t, cl, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	t.Cleanup(func() {
		_ = cl.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		_ = cl.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	framework.ExpectNodeReadyAndPodRuns(t, cl, name)

	before, err := f.Cluster.PID(localcluster.KWOK)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Cluster.Restart(ctx, localcluster.KWOK); err != nil {
		t.Fatal(err)
	}
	after, err := f.Cluster.PID(localcluster.KWOK)
	if err != nil {
		t.Fatal(err)
	}
	if before == after {
		t.Fatalf("kwok pid %d unchanged by Restart", after)
	}
	restarted := metav1.NowMicro()

	// The new kwok renews the Node's lease (kwok renews every
	// --node-lease-duration-seconds/4, 10s).
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		lease := &coordinationv1.Lease{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: name}, lease); err != nil {
			return false, err.Error()
		}
		renewed := lease.Spec.RenewTime
		return renewed != nil && renewed.After(restarted.Time), fmt.Sprintf("node lease renewed at %v, kwok restarted at %v", renewed, restarted)
	})
	node := &corev1.Node{}
	if err := cl.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	if !framework.NodeReady(node) {
		t.Fatalf("node %s is not Ready after the kwok restart: %v", name, node.Status.Conditions)
	}
	framework.Create(t, cl, framework.MakePodOn(name, "after", name))
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		pod := &corev1.Pod{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: name, Name: "after"}, pod); err != nil {
			return false, err.Error()
		}
		return framework.PodRunning(pod), "pod after: " + string(pod.Status.Phase)
	})
	select {
	case err := <-f.Cluster.Died():
		t.Fatalf("the deliberate kwok restart was reported as a death: %v", err)
	default:
	}
}

// A kwok paused past its Nodes' lease is a kubelet that stopped
// reporting: the node lifecycle controller marks the Node's Ready
// condition Unknown and its pods not Ready (Ready=False, ContainersReady
// left True). Resumed, kwok renews the lease, reports the Node Ready and,
// as a kubelet's status sync does, makes the pod Ready again.
func TestKWOKPausedPastItsLeaseMakesItsPodsReadyAgain(t *testing.T) {
	f := framework.Current(t)
	cl := f.Client
	ctx := t.Context()
	const name = "faults-kwok-pause"
	t.Cleanup(func() {
		_ = f.Cluster.Signal(localcluster.KWOK, syscall.SIGCONT)
		_ = cl.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	node, pod := framework.ExpectNodeReadyAndPodRuns(t, cl, name)
	t.Cleanup(func() { _ = cl.Delete(context.Background(), pod) })

	if err := f.Cluster.Signal(localcluster.KWOK, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The controller's grace period is 50s after the last renewal.
	framework.Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		return framework.PodCondition(pod, corev1.PodReady) == corev1.ConditionFalse,
			fmt.Sprintf("pod conditions %v while kwok is paused", pod.Status.Conditions)
	})
	if got := framework.PodCondition(pod, corev1.ContainersReady); got != corev1.ConditionTrue {
		t.Fatalf("ContainersReady=%s on the pod marked not Ready, want True (only Ready is the controller's)", got)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	if framework.ReadyStatus(node) == corev1.ConditionTrue {
		t.Fatalf("node %s still Ready with kwok paused: %v", name, node.Status.Conditions)
	}

	if err := f.Cluster.Signal(localcluster.KWOK, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, err.Error()
		}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		return framework.NodeReady(node) && framework.PodRunning(pod),
			fmt.Sprintf("after kwok resumed: node Ready=%s taints %v; pod conditions %v",
				framework.ReadyStatus(node), node.Spec.Taints, pod.Status.Conditions)
	})
}
