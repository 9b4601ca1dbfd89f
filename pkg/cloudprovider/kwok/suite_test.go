package kwok

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// env is a real etcd + kube-apiserver shared by the tests of this package
// that create Nodes; the pure tests do not touch it.
var env *environment.Environment

// stamp is the fixed time test objects' conditions are stamped with.
var stamp = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	var err error
	env, err = environment.Start(context.Background()) //nolint:forbidigo // TestMain owns the test binary's root context: its API server outlives every test
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// createNodeClass creates a KWOKNodeClass and sets its Ready condition
// (status is ignored on create, so it is written through the subresource).
func createNodeClass(t *testing.T, nodeClass *kwokv1alpha1.KWOKNodeClass) *kwokv1alpha1.KWOKNodeClass {
	t.Helper()
	conditions := nodeClass.Status.Conditions
	if err := env.Client.Create(t.Context(), nodeClass); err != nil {
		t.Fatalf("creating KWOKNodeClass %s: %v", nodeClass.Name, err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.WithoutCancel(t.Context()), nodeClass) })
	if len(conditions) > 0 {
		for i := range conditions {
			conditions[i].ObservedGeneration = nodeClass.Generation
		}
		nodeClass.Status.Conditions = conditions
		if err := env.Client.Status().Update(t.Context(), nodeClass); err != nil {
			t.Fatalf("setting KWOKNodeClass %s status: %v", nodeClass.Name, err)
		}
	}
	return nodeClass
}

// readyNodeClass creates a Ready KWOKNodeClass with a unique name.
func readyNodeClass(t *testing.T, configure func(*test.KWOKNodeClassWrapper)) *kwokv1alpha1.KWOKNodeClass {
	t.Helper()
	w := test.MakeKWOKNodeClass("nc-"+string(uuid.NewUUID())[:8]).Ready(true, stamp)
	if configure != nil {
		configure(w)
	}
	return createNodeClass(t, w.Obj())
}

// newNodeClaim returns a NodeClaim of the default NodePool with a fresh UID
// pointing at the named KWOKNodeClass.
func newNodeClaim(name, nodeClass string) *karpv1.NodeClaim {
	nc := test.MakeNodeClaim(name).NodePool("default").NodeClassRef(kwokv1alpha1.NodeClassReference(nodeClass)).Obj()
	nc.UID = uuid.NewUUID()
	return nc
}

// newProvider returns a kwok provider on the test API server with the
// embedded catalog; it is closed and every Node deleted when the test ends.
func newProvider(t *testing.T, opts ...Option) *CloudProvider {
	t.Helper()
	return newProviderOn(t, env.Client, opts...)
}

// newProviderOn is newProvider reading and writing through kubeClient.
func newProviderOn(t *testing.T, kubeClient client.Client, opts ...Option) *CloudProvider {
	t.Helper()
	c, err := New(kubeClient, append([]Option{WithInstanceTypes(mustEmbeddedTypes(t))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		deleteAllNodes(t)
	})
	return c
}

// deleteAllNodes removes every Node, finalizers included.
func deleteAllNodes(t *testing.T) {
	ctx := context.WithoutCancel(t.Context())
	nodes := &corev1.NodeList{}
	if err := env.Client.List(ctx, nodes); err != nil {
		t.Errorf("listing nodes: %v", err)
		return
	}
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if len(node.Finalizers) > 0 {
			patch := client.MergeFrom(node.DeepCopy())
			node.Finalizers = nil
			if err := env.Client.Patch(ctx, node, patch); err != nil {
				t.Errorf("removing finalizers of %s: %v", node.Name, err)
			}
		}
		if err := client.IgnoreNotFound(env.Client.Delete(ctx, node)); err != nil {
			t.Errorf("deleting node %s: %v", node.Name, err)
		}
	}
}

func getNode(t *testing.T, name string) (*corev1.Node, error) {
	t.Helper()
	node := &corev1.Node{}
	err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, node)
	return node, err
}
