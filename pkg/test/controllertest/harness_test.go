package controllertest_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/controllertest"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

var env *environment.Environment

func TestMain(m *testing.M) { environment.Main(m, &env) }

func TestHarnessRestartsOverTheSameAPIAndCleansUp(t *testing.T) {
	t.Run("world", func(t *testing.T) {
		h := controllertest.New(t, env, statecontrollers.Register, fake.New())
		np := h.ReadyNodePool(test.MakeNodePool("default").Obj())
		h.Create(test.MakeNodeClaim("default-a").NodePool("default").NodeClassRef(np.Spec.Template.Spec.NodeClassRef).Obj())
		h.Create(test.MakePod("p").Namespace(controllertest.Namespace).Obj())
		first := h.Cluster

		h.Restart()

		if h.Cluster == first {
			t.Fatal("Restart kept the cluster state")
		}
		h.Eventually("restarted state sees the NodePool and the NodeClaim", func() bool {
			return len(h.Cluster.NodePools()) == 1 && len(h.Cluster.Nodes()) == 1
		})
		h.StateSynced()
	})
	// The subtest's clean-up ran: nothing it created is left.
	ctx := t.Context()
	for _, list := range []client.ObjectList{&corev1.PodList{}, &karpv1.NodeClaimList{}, &karpv1.NodePoolList{}} {
		if err := env.Client.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		if n := meta.LenList(list); n != 0 {
			t.Errorf("%T has %d items after clean-up", list, n)
		}
	}
}
