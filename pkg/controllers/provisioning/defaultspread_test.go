package provisioning_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	"github.com/karp-autoscaler/karp/pkg/options"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// deployment creates what a Deployment with no topology spread constraints
// and its controller make: the Deployment, its ReplicaSet (selecting the
// pod-template-hash as well) and replicas pending pods owned by the
// ReplicaSet, each small enough to share one node.
func (h *harness) deployment(name string, replicas int) []*corev1.Pod {
	h.t.Helper()
	app := map[string]string{"app": name}
	revision := map[string]string{"app": name, "pod-template-hash": "5d8f"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: app},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: app}, Template: template}}
	h.create(deploy)
	template.Labels = revision
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name + "-5d8f", Namespace: "default",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: deploy.UID, Controller: ptr.To(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: revision}, Template: template}}
	h.create(rs)
	h.t.Cleanup(func() {
		for _, obj := range []client.Object{rs, deploy} {
			_ = h.client.Delete(h.ctx, obj)
		}
	})
	pods := make([]*corev1.Pod, replicas)
	for i := range pods {
		pod := test.MakePod(rs.Name+"-"+string(rune('a'+i))).Labels(revision).Requests("cpu", "100m").Obj()
		pod.UID = ""
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptr.To(true)}}
		pods[i] = pod
	}
	return h.pendingPods(pods...)
}

// withSchedulerConfig rebuilds the provisioner with the defaults of a
// --scheduler-config file, as the operator does.
func (h *harness) withSchedulerConfig(path string) {
	h.t.Helper()
	cfg, err := options.LoadSchedulerConfig(path)
	if err != nil {
		h.t.Fatal(err)
	}
	opts := provisioning.DefaultOptions()
	opts.DefaultSpread = cfg.Spread
	h.provisioner = provisioning.NewProvisioner(h.mgr.GetClient(), h.provider, h.cluster, h.base.Recorder, h.clock, opts)
}

// zonesOf returns the zone each NodeClaim is pinned to ("" when it may
// launch in several).
func (h *harness) zonesOf() []string {
	var zones []string
	for _, nc := range h.nodeClaims() {
		zone := ""
		if r := requirement(nc, corev1.LabelTopologyZone); r != nil && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			zone = r.Values[0]
		}
		zones = append(zones, zone)
	}
	return zones
}

// TestSchedulerConfigSpreadsADeploymentOverZones: started with a
// --scheduler-config whose default constraint spreads over zones
// (DoNotSchedule), the provisioner launches one node per zone for a
// Deployment that declares no spread, where it would otherwise put the
// three small pods on one node; the pods are hinted to their planned
// nodes and not changed.
func TestSchedulerConfigSpreadsADeploymentOverZones(t *testing.T) {
	h := newHarness(t)
	h.withSchedulerConfig("testdata/scheduler-config.yaml")
	h.readyNodePool(test.MakeNodePool("default").Obj())
	pods := h.deployment("web", 3)

	res := h.schedule()
	if len(res.Created) != 3 {
		t.Fatalf("created %d NodeClaims, want one per zone (3)", len(res.Created))
	}
	seen := map[string]bool{}
	for _, zone := range h.zonesOf() {
		if zone == "" || seen[zone] {
			t.Fatalf("NodeClaim zones %v, want three distinct single zones", h.zonesOf())
		}
		seen[zone] = true
	}
	for _, pod := range pods {
		// The scheduler spreads them by the default: each is hinted to
		// its planned node, never left to the scheduler as alike fill.
		if h.cluster.HintedNode(client.ObjectKeyFromObject(pod)) == "" {
			t.Errorf("pod %s is not nominated with a hint", pod.Name)
		}
		var got corev1.Pod
		if err := h.client.Get(h.ctx, client.ObjectKeyFromObject(pod), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Spec.TopologySpreadConstraints) > 0 {
			t.Errorf("pod %s has spread constraints %v: the defaults apply to the simulation only", pod.Name, got.Spec.TopologySpreadConstraints)
		}
	}
}

// TestWithoutSchedulerConfigTheDeploymentSharesANode is the control: the
// same Deployment without --scheduler-config fits one node.
func TestWithoutSchedulerConfigTheDeploymentSharesANode(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.deployment("web", 3)
	if res := h.schedule(); len(res.Created) != 1 {
		t.Fatalf("created %d NodeClaims, want 1", len(res.Created))
	}
}

// TestSchedulerConfigDefaultsNeedADeducedSelector: a bare pod (no owner,
// no Service) gets no default, as with kube-scheduler.
func TestSchedulerConfigDefaultsNeedADeducedSelector(t *testing.T) {
	h := newHarness(t)
	h.withSchedulerConfig("testdata/scheduler-config.yaml")
	h.readyNodePool(test.MakeNodePool("default").Obj())
	bare := map[string]string{"app": "bare"}
	h.pendingPods(test.MakePod("bare-a").Labels(bare).Requests("cpu", "100m").Obj(),
		test.MakePod("bare-b").Labels(bare).Requests("cpu", "100m").Obj())
	if res := h.schedule(); len(res.Created) != 1 {
		t.Fatalf("created %d NodeClaims for bare pods, want 1 (no selector, no default)", len(res.Created))
	}
}

// TestSchedulerConfigDefaultsFollowServices: a Service selecting bare
// pods gives them a selector, so the default spreads them.
func TestSchedulerConfigDefaultsFollowServices(t *testing.T) {
	h := newHarness(t)
	h.withSchedulerConfig("testdata/scheduler-config.yaml")
	h.readyNodePool(test.MakeNodePool("default").Obj())
	served := map[string]string{"app": "served"}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "served", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: served, Ports: []corev1.ServicePort{{Port: 80}}}}
	h.create(svc)
	t.Cleanup(func() { _ = h.client.Delete(h.ctx, svc) })
	h.pendingPods(test.MakePod("served-a").Labels(served).Requests("cpu", "100m").Obj(),
		test.MakePod("served-b").Labels(served).Requests("cpu", "100m").Obj())
	if res := h.schedule(); len(res.Created) != 2 {
		t.Fatalf("created %d NodeClaims for pods a Service selects, want 2 (spread over zones)", len(res.Created))
	}
}
