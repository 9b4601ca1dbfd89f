package provisioning_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// ebsDriver is the CSI driver the test's volumes and CSINodes name.
const ebsDriver = "ebs.csi.aws.com"

// TestVolumeLimitsOfANodeSendAPodToANewOne: every node of the pool can
// attach two volumes of the EBS CSI driver (its CSINode says so, as the
// driver's node plugin reports it). Two pods with one volume each run on
// one node. A third pod with a volume fits that node's CPU and memory but
// not its volume limit: the kube-scheduler will not bind it there, so karp
// must launch a node for it instead of counting on the full one, and it
// runs there.
func TestVolumeLimitsOfANodeSendAPodToANewOne(t *testing.T) {
	const name = "e2e-volumes"
	cl := framework.Current(t).Client
	ensureController(t)
	ensureNodeClass(t)
	reportCSINodes(t, name, 2)
	create(t, pool(name).Obj())
	pods := make([]*corev1.Pod, 3)
	for i := range pods {
		pods[i] = volumePod(t, name, i)
	}
	create(t, pods[0], pods[1])
	running := waitRunning(t, "default", name, 2)
	first := running[0].Spec.NodeName
	if running[1].Spec.NodeName != first || len(nodeClaimsOf(t, name)) != 1 {
		t.Fatalf("pods on %s and %s with %d NodeClaims; want both on one node", first, running[1].Spec.NodeName, len(nodeClaimsOf(t, name)))
	}
	framework.Eventually(t, scaleTimeout, func(ctx context.Context) (bool, string) {
		csiNode := &storagev1.CSINode{}
		err := cl.Get(ctx, client.ObjectKey{Name: first}, csiNode)
		return err == nil, fmt.Sprintf("CSINode %s: %v", first, err)
	})
	// The third pod fits the first node but for its volume limit.
	node := nodeByName(t, first)
	cpu, memory := node.Status.Allocatable.Cpu().DeepCopy(), node.Status.Allocatable.Memory().DeepCopy()
	for _, p := range running {
		cpu.Sub(*p.Spec.Containers[0].Resources.Requests.Cpu())
		memory.Sub(*p.Spec.Containers[0].Resources.Requests.Memory())
	}
	third := pods[2].Spec.Containers[0].Resources.Requests
	if cpu.Cmp(*third.Cpu()) < 0 || memory.Cmp(*third.Memory()) < 0 {
		t.Fatalf("node %s has %s CPU and %s memory left: the third pod would not fit it anyway", first, cpu.String(), memory.String())
	}

	create(t, pods[2])
	running = waitRunning(t, "default", name, 3)
	for _, p := range running {
		if p.Name == pods[2].Name && p.Spec.NodeName == first {
			t.Fatalf("pod %s runs on %s, past its volume limit", p.Name, first)
		}
	}
	if claims := nodeClaimsOf(t, name); len(claims) != 2 {
		t.Errorf("%d NodeClaims, want 2", len(claims))
	}
}

// volumePod is a pod of the app with one volume of ebsDriver: a
// PersistentVolume and a claim bound to it, created now and deleted when
// the test ends.
func volumePod(t *testing.T, app string, i int) *corev1.Pod {
	t.Helper()
	cl := framework.Current(t).Client
	claimName := fmt.Sprintf("%s-data-%d", app, i)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-pv-%d", app, i)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: claimName},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: ebsDriver, VolumeHandle: fmt.Sprintf("vol-%s-%d", app, i)}},
		},
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimName, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(""),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	for _, o := range []client.Object{pv, claim} {
		if err := cl.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		// The claim's and the volume's protection finalizers go once no
		// pod uses them; nothing waits for that.
		_ = cl.Delete(context.Background(), claim)
		_ = cl.Delete(context.Background(), pv)
	})
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, i), Namespace: "default", Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			NodeSelector:                  onPool(app),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "db", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName}}}},
		},
	}
}

// reportCSINodes does what a kubelet and the EBS CSI driver's node plugin
// do on every node of the pool until the test ends: it creates the node's
// CSINode (owned by the Node, so it goes with it) reporting that ebsDriver
// can attach limit volumes there. kwok runs no CSI driver.
func reportCSINodes(t *testing.T, pool string, limit int32) {
	t.Helper()
	cl := framework.Current(t).Client
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		ticker := time.NewTicker(250 * time.Millisecond)
		defer ticker.Stop()
		for {
			var nodes corev1.NodeList
			if err := cl.List(ctx, &nodes, client.MatchingLabels(onPool(pool))); err == nil {
				for _, n := range nodes.Items {
					csiNode := &storagev1.CSINode{
						ObjectMeta: metav1.ObjectMeta{Name: n.Name, OwnerReferences: []metav1.OwnerReference{{
							APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}},
						Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{
							Name: ebsDriver, NodeID: n.Name, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To(limit)}}}},
					}
					if err := cl.Create(ctx, csiNode); err != nil && !apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
						t.Logf("creating CSINode %s: %v", n.Name, err)
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}
