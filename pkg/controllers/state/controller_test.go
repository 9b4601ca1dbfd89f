package state_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/controllertest"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

var env *environment.Environment

func TestMain(m *testing.M) { environment.Main(m, &env) }

// TestStateHoldsTheCachesPods: the cluster state keeps the informer's own
// Pod objects (no copy of any kind), updated as the API changes them and
// gone when the pod is.
func TestStateHoldsTheCachesPods(t *testing.T) {
	h := controllertest.New(t, env, statecontrollers.Register, fake.New())
	pod := test.MakePod("held").Namespace(controllertest.Namespace).Requests("cpu", "1").Obj()
	if err := h.Client.Create(h.Ctx, pod); err != nil {
		t.Fatal(err)
	}
	informer, err := h.Manager.GetCache().GetInformer(h.Ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	store := informer.(toolscache.SharedIndexInformer).GetStore()
	cached := func() any {
		item, _, _ := store.GetByKey(controllertest.Namespace + "/held")
		return item
	}
	inState := func(labels map[string]string) *corev1.Pod {
		for _, p := range h.Cluster.ProvisionablePods() {
			if p.Name == "held" && p.Labels["rev"] == labels["rev"] {
				return p
			}
		}
		return nil
	}
	h.Eventually("the pod in the state", func() bool { return inState(nil) != nil })
	if got := inState(nil); any(got) != cached() {
		t.Errorf("the state holds %p, the cache %p: want the cache's object itself", got, cached())
	}

	patch := client.MergeFrom(pod.DeepCopy())
	pod.Labels = map[string]string{"rev": "2"}
	if err := h.Client.Patch(t.Context(), pod, patch); err != nil {
		t.Fatal(err)
	}
	h.Eventually("the update in the state", func() bool { return inState(pod.Labels) != nil })
	if got := inState(pod.Labels); any(got) != cached() {
		t.Errorf("after an update the state holds %p, the cache %p", got, cached())
	}

	if err := h.Client.Delete(h.Ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	h.Eventually("the pod gone from the state", func() bool { return inState(pod.Labels) == nil })
}
