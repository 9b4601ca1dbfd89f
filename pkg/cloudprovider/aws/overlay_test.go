package aws_test

import (
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/overlay"
)

// Launching from the NodePool's overlaid instance types (what the overlay
// decorator hands the provider) ranks the offerings by the overlaid prices,
// gives the fleet those prices as priorities with a prioritized allocation
// strategy when the NodeClaim says a price overlay applied (as upstream),
// and gives the NodeClaim the capacity an overlay adds.
func TestCreateFromOverlaidInstanceTypes(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	pool := nodePool(nodeClass.Name)
	nc := withRequirement(newNodeClaim("overlaid", nodeClass.Name), karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand)
	types, err := w.Provider.GetInstanceTypes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	cheapest := cloudprovider.LaunchCandidates(types, nc, nil)[0].InstanceType.Name

	// The cheapest type costs $100/hour more; every type gets a device.
	var overlays []overlay.Overlay
	for _, no := range []*karpv1alpha1.NodeOverlay{
		{ObjectMeta: metav1.ObjectMeta{Name: "dearer"}, Spec: karpv1alpha1.NodeOverlaySpec{
			Requirements:    []karpv1alpha1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{cheapest}}},
			PriceAdjustment: awssdk.String("+100"),
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "devices"}, Spec: karpv1alpha1.NodeOverlaySpec{
			Requirements: []karpv1alpha1.NodeSelectorRequirement{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}},
			Capacity:     corev1.ResourceList{"example.com/device": resource.MustParse("1")},
		}},
	} {
		o, err := overlay.New(no)
		if err != nil {
			t.Fatal(err)
		}
		overlays = append(overlays, o)
	}
	overlay.Order(overlays)
	overlaid := overlay.Apply(overlays, pool, types)
	candidates := cloudprovider.LaunchCandidates(overlaid, nc, nil)
	if candidates[0].InstanceType.Name == cheapest {
		t.Fatalf("the overlay left %s the cheapest candidate", cheapest)
	}
	nc.Annotations = map[string]string{karpv1.PriceOverlayAppliedAnnotationKey: "true"}

	created, err := w.Provider.CreateFrom(ctx, nc, overlaid)
	if err != nil {
		t.Fatal(err)
	}
	if got := created.Labels[corev1.LabelInstanceTypeStable]; got != candidates[0].InstanceType.Name {
		t.Errorf("launched %s, want %s, the cheapest after the overlay (EC2's cheapest is %s)", got, candidates[0].InstanceType.Name, cheapest)
	}
	if got := created.Status.Capacity["example.com/device"]; got.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("NodeClaim capacity example.com/device = %s, want 1 from the overlay", got.String())
	}
	inputs := w.EC2.CreateFleetInputs()
	in := inputs[len(inputs)-1]
	if in.OnDemandOptions == nil || in.OnDemandOptions.AllocationStrategy != ec2types.FleetOnDemandAllocationStrategyPrioritized {
		t.Errorf("on-demand options %+v, want the prioritized strategy", in.OnDemandOptions)
	}
	prices := map[string]float64{}
	for _, c := range candidates {
		prices[c.InstanceType.Name+"/"+c.Offering.Zone] = c.Offering.Price
	}
	for _, cfg := range in.LaunchTemplateConfigs {
		for _, o := range cfg.Overrides {
			key := string(o.InstanceType) + "/" + awssdk.ToString(o.AvailabilityZone)
			if want, ok := prices[key]; !ok || awssdk.ToFloat64(o.Priority) != want {
				t.Errorf("override %s priority %v, want the overlaid price %v", key, awssdk.ToFloat64(o.Priority), want)
			}
		}
	}

	// Without the annotation the fleet keeps EC2's lowest price.
	plain := withRequirement(newNodeClaim("plain", nodeClass.Name), karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand)
	if _, err := w.Provider.CreateFrom(ctx, plain, overlaid); err != nil {
		t.Fatal(err)
	}
	inputs = w.EC2.CreateFleetInputs()
	if in := inputs[len(inputs)-1]; in.OnDemandOptions == nil || in.OnDemandOptions.AllocationStrategy != ec2types.FleetOnDemandAllocationStrategyLowestPrice {
		t.Errorf("without the annotation, on-demand options %+v, want lowest-price", in.OnDemandOptions)
	}
}
