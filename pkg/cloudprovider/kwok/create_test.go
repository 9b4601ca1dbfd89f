package kwok

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test"
)

func TestCreateMakesTheNodeKWOKRuns(t *testing.T) {
	c := newProvider(t)
	nodeClass := readyNodeClass(t, nil)
	nc := newNodeClaim("create-node", nodeClass.Name)
	nc.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		in(corev1.LabelInstanceTypeStable, "m5.large"),
		in(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand),
		in(corev1.LabelTopologyZone, "us-east-1b"),
		in("team", "a"),
	}
	created, err := c.Create(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	node, err := getNode(t, "create-node")
	if err != nil {
		t.Fatalf("no Node for the NodeClaim: %v", err)
	}
	if node.Spec.ProviderID != "kwok://create-node" || created.Status.ProviderID != node.Spec.ProviderID {
		t.Errorf("providerIDs: node %q, nodeclaim %q, want kwok://create-node", node.Spec.ProviderID, created.Status.ProviderID)
	}
	// The API server's TaintNodesByCondition admission adds not-ready.
	if !slices.ContainsFunc(node.Spec.Taints, func(taint corev1.Taint) bool { return taint.MatchTaint(&karpv1.UnregisteredNoExecuteTaint) }) {
		t.Errorf("taints %v lack %v", node.Spec.Taints, karpv1.UnregisteredNoExecuteTaint)
	}
	wantLabels := map[string]string{
		corev1.LabelInstanceTypeStable:      "m5.large",
		corev1.LabelTopologyZone:            "us-east-1b",
		corev1.LabelTopologyRegion:          "us-east-1",
		karpv1.CapacityTypeLabelKey:         karpv1.CapacityTypeOnDemand,
		corev1.LabelHostname:                "create-node",
		karpv1.NodePoolLabelKey:             "default",
		"team":                              "a",
		kwokv1alpha1.InstanceFamilyLabelKey: "m5",
		kwokv1alpha1.NodeClassLabelKey:      nodeClass.Name,
		kwokv1alpha1.KWOKNodeLabelKey:       kwokv1alpha1.KWOKNodeLabelValue,
	}
	for k, v := range wantLabels {
		if node.Labels[k] != v {
			t.Errorf("node label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	if node.Annotations[localcluster.KWOKNodeAnnotationKey] != localcluster.KWOKNodeAnnotationValue {
		t.Errorf("node lacks kwok's management annotation: %v", node.Annotations)
	}
	wantCPU := resource.MustParse("1930m")
	if got := node.Status.Allocatable[corev1.ResourceCPU]; got.Cmp(wantCPU) != 0 {
		t.Errorf("node allocatable cpu = %s, want 1930m", got.String())
	}
	if got := created.Status.Allocatable[corev1.ResourceCPU]; got.Cmp(wantCPU) != 0 {
		t.Errorf("nodeclaim allocatable cpu = %s, want 1930m", got.String())
	}
	if created.Status.ImageID != ImageID || created.Annotations[NodeClassHashAnnotationKey] != NodeClassHash(nodeClass) {
		t.Errorf("hydrated nodeclaim: imageID %q annotations %v", created.Status.ImageID, created.Annotations)
	}
	if _, ok := created.Labels[corev1.LabelHostname]; ok {
		t.Error("the hydrated NodeClaim carries the hostname label")
	}
}

func TestCreateResolvesTheNodeClass(t *testing.T) {
	c := newProvider(t)
	notReady := createNodeClass(t, test.MakeKWOKNodeClass("not-ready").Ready(false, stamp).Obj())
	noCondition := createNodeClass(t, test.MakeKWOKNodeClass("no-condition").Obj())
	tests := map[string]struct {
		ref  *karpv1.NodeClassReference
		want func(error) bool
	}{
		"missing NodeClass is insufficient capacity": {kwokv1alpha1.NodeClassReference("missing"), cloudprovider.IsInsufficientCapacityError},
		"Ready=False":       {kwokv1alpha1.NodeClassReference(notReady.Name), cloudprovider.IsNodeClassNotReadyError},
		"no Ready yet":      {kwokv1alpha1.NodeClassReference(noCondition.Name), cloudprovider.IsNodeClassNotReadyError},
		"another NodeClass": {&karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}, cloudprovider.IsCreateError},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nc := newNodeClaim("resolve", "x")
			nc.Spec.NodeClassRef = tc.ref
			_, err := c.Create(t.Context(), nc)
			if !tc.want(err) {
				t.Errorf("Create returned %v", err)
			}
			if _, err := getNode(t, "resolve"); !apierrors.IsNotFound(err) {
				t.Errorf("a refused Create left a Node (get: %v)", err)
			}
		})
	}
	ce, _ := cloudprovider.AsCreateError(func() error {
		nc := newNodeClaim("resolve", "x")
		nc.Spec.NodeClassRef = tests["another NodeClass"].ref
		_, err := c.Create(t.Context(), nc)
		return err
	}())
	if ce == nil || ce.ConditionReason != ReasonNodeClassNotSupported {
		t.Errorf("create error %v, want reason %s", ce, ReasonNodeClassNotSupported)
	}
}

func TestCreateIsIdempotentAcrossRestarts(t *testing.T) {
	nodeClass := readyNodeClass(t, nil)
	nc := newNodeClaim("restart", nodeClass.Name)
	first, err := newProvider(t).Create(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	// A new provider (karp restarted) retries the same NodeClaim.
	restarted := newProvider(t)
	again, err := restarted.Create(t.Context(), nc.DeepCopy())
	if err != nil {
		t.Fatalf("retried Create: %v", err)
	}
	if again.Status.ProviderID != first.Status.ProviderID ||
		again.Labels[corev1.LabelInstanceTypeStable] != first.Labels[corev1.LabelInstanceTypeStable] {
		t.Errorf("retry returned %s/%s, first launch %s/%s", again.Status.ProviderID, again.Labels[corev1.LabelInstanceTypeStable],
			first.Status.ProviderID, first.Labels[corev1.LabelInstanceTypeStable])
	}
	if again.Annotations[NodeClassHashAnnotationKey] != first.Annotations[NodeClassHashAnnotationKey] {
		t.Error("the retry lost the NodeClass hash")
	}
	// Another NodeClaim of the same name must not adopt the Node.
	other := nc.DeepCopy()
	other.UID = "another-uid"
	if _, err := restarted.Create(t.Context(), other); err == nil {
		t.Error("a different NodeClaim of the same name adopted the Node")
	}
	if err := restarted.Delete(t.Context(), withProviderID(other, first.Status.ProviderID)); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Delete for the other NodeClaim returned %v, want NotFound (not its instance)", err)
	}
	if _, err := getNode(t, "restart"); err != nil {
		t.Errorf("the Node is gone: %v", err)
	}
}

func withProviderID(nc *karpv1.NodeClaim, id string) *karpv1.NodeClaim {
	nc = nc.DeepCopy()
	nc.Status.ProviderID = id
	return nc
}

func TestDeleteTreatsATerminatingNodeAsGone(t *testing.T) {
	c := newProvider(t)
	created, _ := createFinalizedNode(t, c, "finalized")
	if err := c.Delete(t.Context(), created); err != nil {
		t.Fatalf("first Delete: %v", err)
	}
	node, err := getNode(t, "finalized")
	if err != nil || node.DeletionTimestamp.IsZero() {
		t.Fatalf("the Node is not terminating (err %v)", err)
	}
	if err := c.Delete(t.Context(), created); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Delete of a terminating Node returned %v, want NotFound", err)
	}
	expectGone(t, c, created.Status.ProviderID, "a terminating Node")
}

// A Node deleted by its drain (karp's termination deletes the Node first;
// its finalizer keeps it while the pods are evicted) is still a running
// instance until Delete terminates it: were it gone, the termination of a
// Node NotReady for a moment would delete its pods without evictions.
func TestADrainingNodeIsStillAnInstance(t *testing.T) {
	c := newProvider(t)
	created, node := createFinalizedNode(t, c, "draining")
	if err := env.Client.Delete(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(t.Context(), created.Status.ProviderID); err != nil {
		t.Fatalf("Get of a Node its drain deleted returned %v, want the instance", err)
	}
	if n := countListed(t, c, created.Status.ProviderID); n != 1 {
		t.Errorf("List shows a draining Node %d times, want once", n)
	}
	if err := c.Delete(t.Context(), created); err != nil {
		t.Fatalf("Delete of a draining Node: %v", err)
	}
	if node, err := getNode(t, "draining"); err != nil || node.Annotations[TerminatedAnnotationKey] != "true" {
		t.Fatalf("after Delete the Node is not marked terminated (err %v)", err)
	}
	expectGone(t, c, created.Status.ProviderID, "a terminated Node")
}

// createFinalizedNode creates an instance whose Node carries karp's
// termination finalizer (as a registered node's does).
func createFinalizedNode(t *testing.T, c *CloudProvider, name string) (*karpv1.NodeClaim, *corev1.Node) {
	t.Helper()
	nodeClass := readyNodeClass(t, nil)
	created, err := c.Create(t.Context(), newNodeClaim(name, nodeClass.Name))
	if err != nil {
		t.Fatal(err)
	}
	node, err := getNode(t, name)
	if err != nil {
		t.Fatal(err)
	}
	node.Finalizers = []string{karpv1.TerminationFinalizer}
	if err := env.Client.Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	return created, node
}

// expectGone checks that Get and List no longer find the instance.
func expectGone(t *testing.T, c *CloudProvider, providerID, what string) {
	t.Helper()
	if _, err := c.Get(t.Context(), providerID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of %s returned %v, want NotFound", what, err)
	}
	if n := countListed(t, c, providerID); n != 0 {
		t.Errorf("List shows %s", what)
	}
}

func countListed(t *testing.T, c *CloudProvider, providerID string) int {
	t.Helper()
	all, err := c.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, nc := range all {
		if nc.Status.ProviderID == providerID {
			n++
		}
	}
	return n
}

func TestListFindsLeakedNodesOnly(t *testing.T) {
	c := newProvider(t)
	leaked := &corev1.Node{}
	leaked.Name = "leaked"
	leaked.Spec.ProviderID = "kwok://leaked"
	other := &corev1.Node{}
	other.Name = "other-cloud"
	other.Spec.ProviderID = "aws:///us-east-1a/i-0123"
	for _, n := range []*corev1.Node{leaked, other} {
		if err := env.Client.Create(t.Context(), n); err != nil {
			t.Fatal(err)
		}
	}
	if countListed(t, c, "kwok://leaked") != 1 {
		t.Error("List misses a kwok Node no NodeClaim knows")
	}
	if countListed(t, c, other.Spec.ProviderID) != 0 {
		t.Error("List includes another provider's Node")
	}
	if _, err := c.Get(t.Context(), other.Spec.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Get of a foreign providerID returned %v, want NotFound", err)
	}
}

func TestInsufficientCapacityThroughCreate(t *testing.T) {
	nodeClass := readyNodeClass(t, nil)
	spotZone, _ := cheapestSpot("m5.large", 0.096)
	refused := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: spotZone, CapacityType: karpv1.CapacityTypeSpot}
	c := newProvider(t, WithInsufficientCapacity(refused))
	nc := newNodeClaim("ice", nodeClass.Name)
	nc.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{in(corev1.LabelInstanceTypeStable, "m5.large")}
	if _, err := c.Create(t.Context(), nc); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("Create returned %v, want an InsufficientCapacityError", err)
	}
	if _, err := getNode(t, "ice"); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused launch created a Node (get: %v)", err)
	}
	retry := newNodeClaim("ice-retry", nodeClass.Name)
	retry.Spec.Requirements = nc.Spec.Requirements
	created, err := c.Create(t.Context(), retry)
	if err != nil {
		t.Fatalf("the next launch failed: %v", err)
	}
	if created.Labels[corev1.LabelTopologyZone] == spotZone && created.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot {
		t.Errorf("the next launch used the refused offering %s", refused)
	}
}

func TestDeleteWithoutARecordedProviderID(t *testing.T) {
	c := newProvider(t)
	nodeClass := readyNodeClass(t, nil)
	nc := newNodeClaim("unrecorded", nodeClass.Name)
	if _, err := c.Create(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	// Another NodeClaim of the same name (different UID) does not match.
	stranger := nc.DeepCopy()
	stranger.UID = "stranger"
	if err := c.Delete(t.Context(), stranger); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("Delete of a same-named NodeClaim returned %v, want NotFound", err)
	}
	// The NodeClaim as stored before its status was written: no providerID.
	if err := c.Delete(t.Context(), nc); err != nil {
		t.Fatalf("Delete without providerID: %v", err)
	}
	if _, err := getNode(t, "unrecorded"); !apierrors.IsNotFound(err) {
		t.Errorf("the instance leaked (get: %v)", err)
	}
	if err := c.Delete(t.Context(), nc); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Errorf("second Delete returned %v, want NotFound", err)
	}
}
