package provisioning_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// An existing node whose CSINode allows one EBS volume, already attached
// to a running pod: a pending pod with a new EBS claim gets a new node,
// while a pending pod without claims is nominated to the existing one.
// With room for two volumes, both pods go to the existing node. A class
// of the in-tree aws-ebs plugin counts against the EBS CSI driver's limit
// (CSI migration).
func TestVolumeLimitsOfExistingNodes(t *testing.T) {
	cases := map[string]struct {
		limit       int32
		provisioner string
		wantCreated int
	}{
		"limit 1":                        {limit: 1, provisioner: "ebs.csi.aws.com", wantCreated: 1},
		"limit 2":                        {limit: 2, provisioner: "ebs.csi.aws.com"},
		"limit 1, in-tree aws-ebs class": {limit: 1, provisioner: "kubernetes.io/aws-ebs", wantCreated: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			limit, wantCreated := tc.limit, tc.wantCreated
			// Claims are never deleted here (no controller lifts their
			// protection finalizer): each case has its own, and its own
			// class.
			suffix := strings.NewReplacer(" ", "-", ",", "", "/", "-").Replace(name)
			h := newHarness(t)
			h.readyNodePool(test.MakeNodePool("default").Obj())
			h.readyNode("existing", "8", "16Gi")
			h.cleanCreate(
				&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "existing"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
					{Name: "ebs.csi.aws.com", NodeID: "i-0123", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To(limit)}}}}},
				&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "ebs-" + suffix}, Provisioner: tc.provisioner,
					VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)},
				ebsClaim("db-0-data-"+suffix, "ebs-"+suffix), ebsClaim("db-1-data-"+suffix, "ebs-"+suffix),
			)
			running := withClaim(test.MakePod("db-0").Requests("cpu", "1").NodeName("existing").Obj(), "db-0-data-"+suffix)
			h.create(running)
			h.eventually("the running pod bound in state", func() bool {
				for _, sn := range h.cluster.Nodes() {
					if sn.Node != nil && sn.Node.Name == "existing" && len(sn.Pods) == 1 {
						return true
					}
				}
				return false
			})
			pods := h.pendingPods(
				withClaim(test.MakePod("db-1").Requests("cpu", "1").Obj(), "db-1-data-"+suffix),
				test.MakePod("web").Requests("cpu", "1").Obj(),
			)

			res := h.schedule()
			if len(res.Created) != wantCreated {
				t.Fatalf("created %v, want %d NodeClaims", res.Created, wantCreated)
			}
			existing := ""
			for _, sn := range h.cluster.Nodes() {
				if sn.Name() == "existing" {
					existing = sn.ID()
				}
			}
			if got := h.cluster.NominatedNode(clientKeyOf(pods[1])); got != existing {
				t.Errorf("pod without claims nominated to %q, want %s", got, existing)
			}
			want := existing
			if wantCreated == 1 {
				want = state.NodeClaimID(res.Created[0])
			}
			if got := h.cluster.NominatedNode(clientKeyOf(pods[0])); got != want {
				t.Errorf("pod with a new claim nominated to %q, want %s", got, want)
			}
		})
	}
}

func ebsClaim(name, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

// cleanCreate creates the objects and deletes them when the test ends
// (the harness cleans up pods, claims, nodes and karp's kinds only).
func (h *harness) cleanCreate(objs ...client.Object) {
	h.t.Helper()
	for _, obj := range objs {
		h.create(obj)
		h.t.Cleanup(func() { _ = env.Client.Delete(context.WithoutCancel(h.ctx), obj) })
	}
}
