package disruption_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

const otherZone = "test-zone-2"

// twoZoneTypes are the small and large test types, on-demand in zone and
// otherZone at the same prices.
func twoZoneTypes() (small, large *cloudprovider.InstanceType) {
	offerings := func(price float64) []*cloudprovider.Offering {
		return []*cloudprovider.Offering{{Zone: zone, CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true},
			{Zone: otherZone, CapacityType: karpv1.CapacityTypeOnDemand, Price: price, Available: true}}
	}
	small = fake.NewInstanceType(fake.InstanceTypeOptions{Name: "small", Resources: test.ResourceList("cpu", "2", "memory", "4Gi", "pods", "10"),
		Offerings: offerings(0.10)})
	large = fake.NewInstanceType(fake.InstanceTypeOptions{Name: "large", Resources: test.ResourceList("cpu", "8", "memory", "16Gi", "pods", "40"),
		Offerings: offerings(1.00)})
	return small, large
}

// moveToZone relabels a running node into another zone.
func (h *harness) moveToZone(name, z string) {
	h.t.Helper()
	h.relabel(name, corev1.LabelTopologyZone, z)
}

// relabel sets a label of a running node (Node and NodeClaim) and waits
// until the cluster state sees it.
func (h *harness) relabel(name, key, value string) {
	h.t.Helper()
	node := &corev1.Node{}
	if err := h.client.Get(h.ctx, client.ObjectKey{Name: name}, node); err != nil {
		h.t.Fatalf("getting node %s: %v", name, err)
	}
	node.Labels[key] = value
	if err := h.client.Update(h.ctx, node); err != nil {
		h.t.Fatalf("relabeling node %s: %v", name, err)
	}
	nc := h.nodeClaim(name)
	nc.Labels[key] = value
	if err := h.client.Update(h.ctx, nc); err != nil {
		h.t.Fatalf("relabeling nodeclaim %s: %v", name, err)
	}
	h.eventually("node "+name+" labeled "+key+"="+value, func() bool {
		for _, sn := range h.cluster.Nodes() {
			if sn.Name() == name && sn.Node != nil && sn.Node.Labels[key] == value && sn.NodeClaim != nil && sn.NodeClaim.Labels[key] == value {
				return true
			}
		}
		return false
	})
}

// zonalVolume creates a PersistentVolume pinned to z and a claim bound to
// it, removed (finalizers included) when the test ends.
func (h *harness) zonalVolume(claim, z string) {
	h.t.Helper()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: claim + "-pv"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.example.com", VolumeHandle: claim}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{z}}}}}}},
		}}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: pv.Name, StorageClassName: new(string),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	h.create(pv)
	h.create(pvc)
	h.t.Cleanup(func() {
		for _, obj := range []client.Object{pvc, pv} {
			_ = env.Client.Get(h.ctx, client.ObjectKeyFromObject(obj), obj)
			obj.SetFinalizers(nil)
			_ = env.Client.Update(h.ctx, obj)
			_ = env.Client.Delete(h.ctx, obj)
		}
	})
}

// withClaim mounts the claim into the pod.
func withClaim(p *corev1.Pod, claim string) *corev1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data",
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return p
}

// A pod whose volume lives in zone 1 sits on an expensive node; a cheaper
// node with room runs in zone 2. Moving the pod there would strand it
// away from its disk, so the node is replaced by a cheaper one in zone 1.
func TestConsolidationKeepsZonalVolumesInTheirZone(t *testing.T) {
	h := newHarness(t)
	small, large := twoZoneTypes()
	h.provider.SetInstanceTypes(small, large)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	h.zonalVolume("data", zone)
	h.runningNode("big", nodeOpts{it: large}, withClaim(pod("p1", "1"), "data"))
	h.runningNode("other", nodeOpts{it: small}, pod("p2", "500m"))
	h.moveToZone("other", otherZone)
	h.decide()

	repl := h.replacements("big", "other")
	if h.gone("big") && len(repl) == 0 {
		t.Fatal("node deleted: its pod would move to zone 2, away from its volume")
	}
	if len(repl) != 1 {
		t.Fatalf("%d replacements, want 1 (DisruptionBlocked = %+v)", len(repl), h.blocked("big"))
	}
	if got := requirementValues(&repl[0], corev1.LabelTopologyZone); got != zone {
		t.Errorf("replacement may launch in zones %q, want only %s", got, zone)
	}
	if h.gone("other") || h.tainted("other") {
		t.Error("the node in zone 2 was disrupted")
	}
}

func TestUnresolvableVolumeKeepsTheNode(t *testing.T) {
	h := newHarness(t)
	h.readyNodePool(test.MakeNodePool("default").Obj())
	h.runningNode("big", nodeOpts{it: largeType}, withClaim(pod("p1", "1"), "missing"))
	h.decide()
	if h.gone("big") || len(h.replacements("big")) != 0 {
		t.Fatal("node with a pod whose claim is missing was disrupted")
	}
	c := h.blocked("big")
	if c == nil || c.Reason != disruption.BlockedVolumeTopology || !strings.Contains(c.Message, "default/missing") {
		t.Fatalf("DisruptionBlocked = %+v, want reason %s naming the claim", c, disruption.BlockedVolumeTopology)
	}
}

// requirementValues is the comma-joined values of the NodeClaim's
// requirement on key.
func requirementValues(nc *karpv1.NodeClaim, key string) string {
	for _, r := range nc.Spec.Requirements {
		if r.Key == key {
			return strings.Join(r.Values, ",")
		}
	}
	return ""
}
