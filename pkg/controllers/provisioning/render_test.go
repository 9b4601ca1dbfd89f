package provisioning_test

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/kwok"
	"github.com/karp-autoscaler/karp/pkg/manifest"
	"github.com/karp-autoscaler/karp/pkg/simulate"
	"github.com/karp-autoscaler/karp/pkg/test/controllertest"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

// TestSimulatePrintsWhatTheProvisionerCreates applies each seed scenario
// to the API server, runs a provisioning pass over it against the EC2
// catalog, and checks that the NodeClaims created are the ones `karp
// simulate -o yaml` prints for the same manifests: the same labels,
// annotations, finalizers, owner, requirements (instance types in the
// same price order), requests and template fields. Only what the API
// server or the pass assigns differs (name, UID, owner UID, the batch
// annotation of a multi-node pass).
func TestSimulatePrintsWhatTheProvisionerCreates(t *testing.T) {
	catalog, err := kwok.LoadInstanceTypes("", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string][]string{
		"GPU pods on p3":                          {"nodepool-gpu.yaml", "deployment-inflate-gpu.yaml"},
		"my-team pods on listed types":            {"nodepool-generalcompute.yaml", "deployment-my-team.yaml"},
		"nginx-demo replicas apart":               {"nodepools-default-stable.yaml", "nginx-demo.yaml"},
		"do-not-disrupt pod on spot":              {"nodepool-spot.yaml", "nginx-do-not-disrupt.yaml"},
		"do-not-disrupt pod with a PriorityClass": {"nodepools-default-stable.yaml", "nginx-do-not-disrupt.yaml", "priorityclass.yaml"},
		"DaemonSet overhead on every node":        {"nodepools-default-stable.yaml", "daemonset-all-nodes.yaml", "nginx-demo.yaml"},
		"every seed manifest at once":             {""},
	}
	for name, files := range tests {
		t.Run(name, func(t *testing.T) {
			paths := make([]string, 0, len(files))
			for _, f := range files {
				paths = append(paths, fixtures.Example(t, f)) // "" is the whole directory
			}
			set, err := manifest.Load(paths...)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := simulate.Simulate(t.Context(), set, catalog)
			if err != nil {
				t.Fatal(err)
			}
			printed := rep.NodeClaimObjects()
			if len(printed) == 0 {
				t.Fatal("simulate printed no NodeClaim")
			}
			cluster, err := manifest.Expand(set)
			if err != nil {
				t.Fatal(err)
			}

			h := newHarness(t)
			h.provider.SetInstanceTypes(catalog...)
			h.applyAround(set)
			for _, np := range set.NodePools {
				np = np.DeepCopy()
				np.UID, np.ResourceVersion = "", ""
				h.readyNodePool(np)
			}
			pods := make([]*corev1.Pod, 0, len(cluster.Pending))
			for _, pod := range cluster.Pending {
				pod = pod.DeepCopy()
				pod.UID, pod.ResourceVersion = "", ""
				pods = append(pods, pod)
			}
			h.pendingPods(pods...)
			res := h.schedule()
			if len(res.Created) != len(printed) {
				t.Fatalf("the pass created %d NodeClaims, simulate printed %d", len(res.Created), len(printed))
			}
			var created []*karpv1.NodeClaim
			for _, nc := range h.nodeClaims() {
				created = append(created, nc.DeepCopy())
			}
			if diff := cmp.Diff(normalized(t, printed), normalized(t, created), quantities); diff != "" {
				t.Errorf("NodeClaims (-simulate,+provisioner):\n%s", diff)
			}
		})
	}
}

// applyAround creates what the manifests hold besides NodePools and pods
// that the provisioner reads: PriorityClasses (kept when they exist),
// LimitRanges and DaemonSets (in the test namespace, which the harness
// cleans up; where a DaemonSet runs does not change its overhead), and
// waits until state has the DaemonSets.
func (h *harness) applyAround(set *manifest.Set) {
	h.t.Helper()
	for _, pc := range set.PriorityClasses {
		pc = pc.DeepCopy()
		pc.UID, pc.ResourceVersion = "", ""
		if err := h.client.Create(h.ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
			h.t.Fatalf("creating PriorityClass %s: %v", pc.Name, err)
		}
	}
	for _, lr := range set.LimitRanges {
		lr = lr.DeepCopy()
		lr.UID, lr.ResourceVersion, lr.Namespace = "", "", controllertest.Namespace
		h.create(lr)
	}
	for _, ds := range set.DaemonSets {
		ds = ds.DeepCopy()
		ds.UID, ds.ResourceVersion, ds.Namespace = "", "", controllertest.Namespace
		h.create(ds)
	}
	h.eventually("DaemonSets in state", func() bool { return len(h.cluster.DaemonSets()) == len(set.DaemonSets) })
}

// quantities compares resource quantities by value (the API server
// prints them in canonical form).
var quantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// normalized drops what the API server or one pass assigns and orders the
// NodeClaims by their content.
func normalized(t *testing.T, claims []*karpv1.NodeClaim) []*karpv1.NodeClaim {
	t.Helper()
	out := make([]*karpv1.NodeClaim, 0, len(claims))
	keys := map[*karpv1.NodeClaim]string{}
	for _, nc := range claims {
		nc = nc.DeepCopy()
		nc.TypeMeta = metav1.TypeMeta{}
		nc.ObjectMeta = metav1.ObjectMeta{GenerateName: nc.GenerateName, Labels: nc.Labels, Annotations: nc.Annotations,
			Finalizers: nc.Finalizers, OwnerReferences: nc.OwnerReferences}
		delete(nc.Annotations, karpv1.ProvisioningBatchAnnotationKey)
		if len(nc.Annotations) == 0 {
			nc.Annotations = nil
		}
		for i := range nc.OwnerReferences {
			nc.OwnerReferences[i].UID = ""
		}
		nc.Status = karpv1.NodeClaimStatus{}
		key, err := json.Marshal(nc)
		if err != nil {
			t.Fatal(err)
		}
		keys[nc] = string(key)
		out = append(out, nc)
	}
	sort.SliceStable(out, func(i, j int) bool { return keys[out[i]] < keys[out[j]] })
	return out
}
