package disruption_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// rebalanceTypes are two spot types of the same size: the node's, whose
// offering the provider reports unavailable (as the AWS interruption
// controller marks it on a recommendation), and a pricier one.
func rebalanceTypes() (marked, other *cloudprovider.InstanceType) {
	spot := func(price float64, available bool) []*cloudprovider.Offering {
		return []*cloudprovider.Offering{{Zone: zone, CapacityType: karpv1.CapacityTypeSpot, Price: price, Available: available}}
	}
	resources := test.ResourceList("cpu", "4", "memory", "8Gi", "pods", "20")
	marked = fake.NewInstanceType(fake.InstanceTypeOptions{Name: "spot-marked", Resources: resources, Offerings: spot(0.20, false)})
	other = fake.NewInstanceType(fake.InstanceTypeOptions{Name: "spot-other", Resources: resources, Offerings: spot(0.30, true)})
	return marked, other
}

// rebalanceHarness starts a harness with the spot catalog, a NodePool
// (opted in to replacement when optIn) that never consolidates, and a spot
// node "spot" of the marked type running a 1-cpu pod, with the given extra
// NodeClaim conditions and options.
func rebalanceHarness(t *testing.T, optIn bool, o nodeOpts, budgets ...karpv1.Budget) (*harness, *cloudprovider.InstanceType) {
	t.Helper()
	h := newHarness(t)
	marked, other := rebalanceTypes()
	h.provider.SetInstanceTypes(marked, other)
	npw := test.MakeNodePool("default").ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never))
	if len(budgets) > 0 {
		npw.Budgets(budgets...)
	}
	np := npw.Obj()
	if optIn {
		np.Annotations = map[string]string{karpv1.SpotRebalanceAnnotationKey: karpv1.SpotRebalanceReplace}
	}
	h.readyNodePool(np)
	o.it = marked
	p := pod("p1", "1")
	if o.terminationGracePeriod > 0 {
		p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	}
	h.runningNode("spot", o, p)
	h.relabel("spot", karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot)
	return h, other
}

var recommended = []string{karpv1.ConditionTypeRebalanceRecommended}

// A recommended node of an opted-in pool gets its replacement at once, on
// an available offering; it is tainted but not deleted while the
// replacement initializes, and passes in between launch nothing more. Once
// the replacement is initialized the node is deleted.
func TestSpotRebalanceReplacesFirstThenDeletes(t *testing.T) {
	h, other := rebalanceHarness(t, true, nodeOpts{conditions: recommended})
	if !h.pass() {
		t.Fatalf("the first pass did nothing (DisruptionBlocked = %+v)", h.blocked("spot"))
	}
	repl := h.replacements("spot")
	if len(repl) != 1 {
		t.Fatalf("%d replacements, want 1", len(repl))
	}
	if got := instanceTypes(&repl[0]); got != other.Name {
		t.Errorf("replacement may launch %q, want only %q (the node's offering is unavailable)", got, other.Name)
	}
	if got := requirementValues(&repl[0], karpv1.CapacityTypeLabelKey); got != karpv1.CapacityTypeSpot {
		t.Errorf("replacement capacity types %q, want spot", got)
	}
	cond := h.nodeClaim("spot").StatusConditions().Get(karpv1.ConditionTypeDisruptionReason)
	if cond == nil || cond.Reason != string(disruption.ReasonSpotRebalance) {
		t.Errorf("DisruptionReason = %+v, want reason %s", cond, disruption.ReasonSpotRebalance)
	}
	// The replacement launches; the node keeps serving meanwhile, and
	// further passes (a repeated recommendation changes nothing either)
	// start nothing else.
	h.launch(&repl[0], other)
	for range 3 {
		h.pass()
		h.clock.Step(time.Second)
	}
	if h.gone("spot") {
		t.Fatal("node deleted before its replacement initialized")
	}
	if !h.tainted("spot") {
		t.Error("node not tainted karpenter.sh/disrupted while its replacement launches")
	}
	if n := len(h.replacements("spot")); n != 1 {
		t.Fatalf("%d replacements after more passes, want still 1", n)
	}
	h.initialize(&repl[0], other)
	h.pass()
	if !h.gone("spot") {
		t.Fatal("node not deleted after its replacement initialized")
	}
	h.pass()
	if n := len(h.replacements("spot")); n != 1 {
		t.Fatalf("%d replacements after the node went, want 1", n)
	}
}

// Without the NodePool's opt-in, or without the condition, nothing
// happens; with both, the pool's Drifted budget bounds the replacement and
// a pod blocker keeps the node even with a terminationGracePeriod.
func TestSpotRebalanceOnlyWhenOptedInAndAllowed(t *testing.T) {
	cases := map[string]struct {
		optIn   bool
		opts    nodeOpts
		budgets []karpv1.Budget
		blocked string
	}{
		"condition, pool not opted in": {opts: nodeOpts{conditions: recommended}},
		"opted in, no condition":       {optIn: true},
		"zero Drifted budget": {optIn: true, opts: nodeOpts{conditions: recommended},
			budgets: []karpv1.Budget{{Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}},
			blocked: disruption.BlockedBudget},
		"do-not-disrupt pod, grace period": {optIn: true, opts: nodeOpts{conditions: recommended, terminationGracePeriod: time.Hour},
			blocked: disruption.BlockedDoNotDisrupt},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, _ := rebalanceHarness(t, tc.optIn, tc.opts, tc.budgets...)
			h.pass()
			h.pass()
			if n := len(h.replacements("spot")); n != 0 || h.tainted("spot") || h.gone("spot") {
				t.Fatalf("%d replacements, tainted=%v, gone=%v; want the node left alone", n, h.tainted("spot"), h.gone("spot"))
			}
			if tc.blocked != "" {
				if c := h.blocked("spot"); c == nil || c.Reason != tc.blocked {
					t.Errorf("DisruptionBlocked = %+v, want reason %s", c, tc.blocked)
				}
			}
		})
	}
}

// A recommended node that is also drifted is replaced as a rebalance (the
// method comes first).
func TestSpotRebalanceComesBeforeDrift(t *testing.T) {
	h, _ := rebalanceHarness(t, true, nodeOpts{conditions: append([]string{karpv1.ConditionTypeDrifted}, recommended...)})
	h.pass()
	if n := len(h.replacements("spot")); n != 1 {
		t.Fatalf("%d replacements, want 1", n)
	}
	if cond := h.nodeClaim("spot").StatusConditions().Get(karpv1.ConditionTypeDisruptionReason); cond == nil || cond.Reason != string(disruption.ReasonSpotRebalance) {
		t.Errorf("DisruptionReason = %+v, want reason %s", cond, disruption.ReasonSpotRebalance)
	}
}

// A replacement that never initializes leaves the node serving,
// untainted, and no second replacement is launched during the backoff.
func TestSpotRebalanceWhoseReplacementNeverInitializesKeepsTheNode(t *testing.T) {
	h, other := rebalanceHarness(t, true, nodeOpts{conditions: recommended})
	h.pass()
	first := h.replacements("spot")
	if len(first) != 1 {
		t.Fatalf("%d replacements, want 1", len(first))
	}
	h.launch(&first[0], other)
	h.clock.Step(h.opts.QueueTimeout + 1)
	h.pass()
	for range 3 {
		h.pass()
		h.clock.Step(h.opts.QueueTimeout / 2)
	}
	if h.gone("spot") || h.tainted("spot") {
		t.Fatalf("node gone=%v tainted=%v after the timeout; want it serving and untainted", h.gone("spot"), h.tainted("spot"))
	}
	if repl := liveReplacements(h, "spot"); len(repl) != 1 {
		t.Fatalf("replacements %v after the timeout, want only the first", names(repl))
	}
	if c := h.blocked("spot"); c == nil || c.Reason != disruption.BlockedFailedDisruption {
		t.Errorf("DisruptionBlocked = %+v, want %s", c, disruption.BlockedFailedDisruption)
	}
	if nc := h.nodeClaim("spot"); nc == nil || nc.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeSpot ||
		nc.Labels[corev1.LabelInstanceTypeStable] != "spot-marked" {
		t.Errorf("node's NodeClaim changed: %+v", nc)
	}
}
