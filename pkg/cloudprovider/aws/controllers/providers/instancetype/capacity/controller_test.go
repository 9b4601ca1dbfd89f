package capacity_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/providers/instancetype/capacity"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// estimate is m5.large's memory before any Node reports it: 8192 MiB less
// the 7.5% VM overhead, rounded up.
var estimate = resource.MustParse("7577Mi")

// launched describes the NodeClaim and Node of one m5.large instance.
type launched struct {
	// imageID is the NodeClaim's status.imageID.
	imageID string
	// registered labels the Node karpenter.sh/registered=true.
	registered bool
	// nodeClassRef, when set, replaces the reference to the EC2NodeClass.
	nodeClassRef *karpv1.NodeClassReference
	// noNodeClaim leaves the Node without a NodeClaim.
	noNodeClaim bool
}

func TestNodeMemoryIsLearnt(t *testing.T) {
	// awstest.StatusAMIs: m5.large (amd64, no GPU) launches ami-amd64.
	reported := resource.MustParse("7300Mi")
	for name, tc := range map[string]struct {
		launched launched
		want     resource.Quantity
	}{
		"a registered Node of the AMI a launch picks now": {launched: launched{imageID: "ami-amd64", registered: true}, want: reported},
		"a Node of an older AMI":                          {launched: launched{imageID: "ami-older", registered: true}, want: estimate},
		"a Node of another AMI of the class":              {launched: launched{imageID: "ami-arm64", registered: true}, want: estimate},
		"a Node not registered yet":                       {launched: launched{imageID: "ami-amd64"}, want: estimate},
		"a Node whose NodeClaim is gone":                  {launched: launched{imageID: "ami-amd64", registered: true, noNodeClaim: true}, want: estimate},
		"a Node of another provider's NodeClass": {launched: launched{imageID: "ami-amd64", registered: true,
			nodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}}, want: estimate},
	} {
		t.Run(name, func(t *testing.T) {
			t.Cleanup(func() { h.Reset(t) })
			nodeClass := awstest.CreateNodeClass(t, h.Env.Client, awstest.NewNodeClass(nil), true)
			w := awstest.NewWorld(t, h.Env)
			controller := capacity.NewController(h.Client, w.Types)
			node := launch(t, nodeClass, tc.launched, reported)

			if _, err := operatortest.Reconcile(t, h, controller, node.Name); err != nil {
				t.Fatal(err)
			}
			if got := memory(t, w, nodeClass); got.Cmp(tc.want) != 0 {
				t.Errorf("m5.large memory capacity = %s, want %s", got.String(), tc.want.String())
			}
		})
	}
}

// A second Node reporting more memory does not raise what the first
// taught (the smallest wins).
func TestSmallestNodeMemoryWins(t *testing.T) {
	t.Cleanup(func() { h.Reset(t) })
	nodeClass := awstest.CreateNodeClass(t, h.Env.Client, awstest.NewNodeClass(nil), true)
	w := awstest.NewWorld(t, h.Env)
	controller := capacity.NewController(h.Client, w.Types)
	for _, reported := range []string{"7300Mi", "7400Mi"} {
		node := launch(t, nodeClass, launched{imageID: "ami-amd64", registered: true}, resource.MustParse(reported))
		if _, err := operatortest.Reconcile(t, h, controller, node.Name); err != nil {
			t.Fatal(err)
		}
	}
	if got := memory(t, w, nodeClass); got.Cmp(resource.MustParse("7300Mi")) != 0 {
		t.Errorf("m5.large memory capacity = %s, want the smaller report 7300Mi", got.String())
	}
}

// launch stores the NodeClaim (unless l.noNodeClaim) and Node of one
// m5.large instance whose Node reports memory.
func launch(t *testing.T, nodeClass *awsv1.EC2NodeClass, l launched, memory resource.Quantity) *corev1.Node {
	t.Helper()
	nodeClaim := awstest.NewNodeClaim("m5", nodeClass.Name)
	if l.nodeClassRef != nil {
		nodeClaim.Spec.NodeClassRef = l.nodeClassRef
	}
	providerID := instance.ProviderID(awstest.Zones[0].Name, "i-"+nodeClaim.Name)
	if !l.noNodeClaim {
		nodeClaim.UID = ""
		h.Create(t, nodeClaim)
		nodeClaim.Status.ProviderID, nodeClaim.Status.ImageID = providerID, l.imageID
		h.UpdateStatus(t, nodeClaim)
	}
	nodeWrapper := test.MakeNode("node-"+nodeClaim.Name).Label(corev1.LabelInstanceTypeStable, "m5.large").ProviderID(providerID)
	if l.registered {
		nodeWrapper.Label(karpv1.NodeRegisteredLabelKey, "true")
	}
	node := nodeWrapper.Obj()
	h.Create(t, node)
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceMemory: memory, corev1.ResourceCPU: resource.MustParse("2")}
	h.UpdateStatus(t, node)
	return node
}

// memory is m5.large's memory capacity as the class's launches see it.
func memory(t *testing.T, w *awstest.World, nodeClass *awsv1.EC2NodeClass) resource.Quantity {
	t.Helper()
	types, err := w.Types.List(t.Context(), nodeClass)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if it.Name == "m5.large" {
			return it.Capacity[corev1.ResourceMemory]
		}
	}
	t.Fatal("m5.large not listed")
	return resource.Quantity{}
}
