package disruption_test

import (
	"fmt"
	"strings"
	"testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// spotTypes is a large spot type ($1.00/h) and n small ones, spot only,
// with prices $0.10/h, $0.11/h, ... (all cheaper), listed priciest first.
func spotTypes(n int) (large *cloudprovider.InstanceType, types []*cloudprovider.InstanceType) {
	spot := func(price float64) []*cloudprovider.Offering {
		return []*cloudprovider.Offering{{Zone: zone, CapacityType: karpv1.CapacityTypeSpot, Price: price, Available: true}}
	}
	large = fake.NewInstanceType(fake.InstanceTypeOptions{Name: "large-spot", Resources: test.ResourceList("cpu", "8", "memory", "16Gi", "pods", "40"),
		Offerings: spot(1.00)})
	types = append(types, large)
	for i := n - 1; i >= 0; i-- {
		types = append(types, fake.NewInstanceType(fake.InstanceTypeOptions{Name: fmt.Sprintf("small-%02d", i),
			Resources: test.ResourceList("cpu", "2", "memory", "4Gi", "pods", "10"), Offerings: spot(0.10 + 0.01*float64(i))}))
	}
	return large, types
}

// spotHarness starts a harness with the SpotToSpotConsolidation gate as
// given, the spot catalog, and a spot node "big" of the large type running
// a 1-cpu pod.
func spotHarness(t *testing.T, gate bool, smallTypes int) *harness {
	h := newHarness(t)
	h.opts.SpotToSpot = gate
	h.newController()
	large, types := spotTypes(smallTypes)
	h.provider.SetInstanceTypes(types...)
	h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
	h.runningNode("big", nodeOpts{it: large}, pod("p1", "1"))
	h.relabel("big", karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot)
	return h
}

func TestSpotToSpotGateOffKeepsSpotNodes(t *testing.T) {
	h := spotHarness(t, false, 20)
	h.decide()
	if h.gone("big") || len(h.replacements("big")) != 0 {
		t.Fatal("spot node replaced by spot capacity with the gate off")
	}
	c := h.blocked("big")
	if c == nil || c.Reason != disruption.BlockedSpotToSpot || c.Message != "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node" {
		t.Fatalf("DisruptionBlocked = %+v, want the disabled spot-to-spot reason", c)
	}
}

func TestSpotToSpotGateOffStillDeletes(t *testing.T) {
	h := spotHarness(t, false, 20)
	large, _ := spotTypes(0)
	h.runningNode("other", nodeOpts{it: large}, pod("p2", "1"))
	h.relabel("other", karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot)
	h.decide()
	if n := len(h.replacements("big", "other")); n != 0 {
		t.Fatalf("%d spot replacements launched with the gate off", n)
	}
	if !h.gone("big") && !h.gone("other") {
		t.Fatalf("no spot node deleted although one's pod fits on the other (big: %+v, other: %+v)", h.blocked("big"), h.blocked("other"))
	}
}

func TestSpotToSpotNeedsFifteenCheaperTypes(t *testing.T) {
	h := spotHarness(t, true, 10)
	h.decide()
	if h.gone("big") || len(h.replacements("big")) != 0 {
		t.Fatal("spot node replaced with only 10 cheaper instance types")
	}
	want := "SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got 10"
	if c := h.blocked("big"); c == nil || c.Reason != disruption.BlockedSpotToSpot || c.Message != want {
		t.Fatalf("DisruptionBlocked = %+v, want reason %s: %q", c, disruption.BlockedSpotToSpot, want)
	}
}

func TestSpotToSpotLaunchesWithTheFifteenCheapest(t *testing.T) {
	h := spotHarness(t, true, 20)
	h.decide()
	repl := h.replacements("big")
	if len(repl) != 1 {
		t.Fatalf("%d replacements, want 1 (DisruptionBlocked = %+v)", len(repl), h.blocked("big"))
	}
	var want []string
	for i := range 15 {
		want = append(want, fmt.Sprintf("small-%02d", i))
	}
	if got := instanceTypes(&repl[0]); got != strings.Join(want, ",") {
		t.Errorf("replacement may launch %s, want the 15 cheapest %s", got, strings.Join(want, ","))
	}
	if got := requirementValues(&repl[0], karpv1.CapacityTypeLabelKey); got != karpv1.CapacityTypeSpot {
		t.Errorf("replacement capacity types %q, want spot", got)
	}
}
