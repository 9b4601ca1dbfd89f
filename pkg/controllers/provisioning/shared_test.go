package provisioning_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/karp-autoscaler/karp/pkg/test"
)

// The state hands out its pods without copying them (see pkg/state): a
// provisioning pass, from the solve to the nominations and the hints,
// must leave every pod it was given as it found it.
func TestSchedulingLeavesTheSharedPodsUnchanged(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	app := map[string]string{"app": "web"}
	h.pendingPods(
		test.MakePod("web-1").Labels(app).Requests("cpu", "2").Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, app).Obj(),
		test.MakePod("web-2").Labels(app).Requests("cpu", "2").Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, app).Obj(),
		test.MakePod("db").Requests("cpu", "1", "memory", "2Gi").PodAntiAffinity(corev1.LabelHostname, app).HostPort(5432).Obj(),
		test.MakePod("batch-1").Requests("cpu", "500m").Obj(),
		test.MakePod("batch-2").Requests("cpu", "500m").Obj(),
	)
	h.base.StateSynced()
	shared := h.cluster.ProvisionablePods()
	if len(shared) != 5 {
		t.Fatalf("%d provisionable pods, want 5", len(shared))
	}
	before := make([]*corev1.Pod, len(shared))
	for i, pod := range shared {
		before[i] = pod.DeepCopy()
	}

	res := h.schedule()
	if len(res.Created) == 0 {
		t.Fatal("the pass created no NodeClaim")
	}
	for i, pod := range shared {
		if !equality.Semantic.DeepEqual(before[i], pod) {
			t.Errorf("pod %s was modified by the provisioning pass", pod.Name)
		}
	}
}
