package kwok

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// TestKWOKRunsTheLaunchedNode checks the provider's Nodes against the real
// kwok controller of a local cluster: kwok must adopt the Node (it turns
// Ready) and run a pod the scheduler binds to it.
func TestKWOKRunsTheLaunchedNode(t *testing.T) {
	_, cl := environment.StartLocalCluster(t)
	ctx := t.Context()

	nodeClass := test.MakeKWOKNodeClass("default").Ready(true, stamp).Obj()
	conditions := nodeClass.Status.Conditions
	if err := cl.Create(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	nodeClass.Status.Conditions = conditions
	if err := cl.Status().Update(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	c, err := New(cl, WithInstanceTypes(mustEmbeddedTypes(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nc := newNodeClaim("kwok-run", nodeClass.Name)
	nc.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{in(corev1.LabelInstanceTypeStable, "m5.large")}
	if _, err := c.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}

	// 1. kwok adopts the Node and reports it Ready.
	poll(t, ctx, "the Node to turn Ready", func(ctx context.Context) (bool, error) {
		node := &corev1.Node{}
		if err := cl.Get(ctx, client.ObjectKey{Name: "kwok-run"}, node); err != nil {
			return false, err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})

	// 2. A pod scheduled onto it runs (it tolerates the taint karp's
	// registration would remove).
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "on-kwok", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{corev1.LabelHostname: "kwok-run"},
			Tolerations:  []corev1.Toleration{{Key: karpv1.UnregisteredTaintKey, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "app", Image: "app", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
		},
	}
	if err := cl.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, "the pod to run on the Node", func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err
		}
		return pod.Spec.NodeName == "kwok-run" && pod.Status.Phase == corev1.PodRunning, nil
	})
}

func poll(t *testing.T, ctx context.Context, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
