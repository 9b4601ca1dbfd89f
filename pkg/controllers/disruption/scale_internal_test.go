package disruption

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// countingSimulator records the candidates of each what-if and answers a
// delete for any set of at most fits candidates, else none.
type countingSimulator struct {
	fits  int
	calls [][]string
}

func (s *countingSimulator) Simulate(_ context.Context, _ simulation.ConsolidationOptions, cands ...*Candidate) (*simulation.Consolidation, error) {
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.Name()
	}
	s.calls = append(s.calls, names)
	if len(cands) <= s.fits {
		return &simulation.Consolidation{Decision: simulation.ConsolidationDelete}, nil
	}
	return &simulation.Consolidation{Decision: simulation.ConsolidationNone, Reason: "does not fit"}, nil
}

func (s *countingSimulator) StaticReplacement(*karpv1.NodePool, []*scheduling.InstanceType) ([]*simulation.NodeClaim, string) {
	return nil, "not used"
}

// scaleCandidates returns n candidates of one pool, shuffled, whose
// consolidation order (price per disruption, highest first) is
// node-0, node-1, …
func scaleCandidates(n int) (*world, []*Candidate) {
	pool := poolWithBudgets("default")
	w := pureWorld(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), []*karpv1.NodePool{pool})
	cands := make([]*Candidate, n)
	for i := range n {
		cands[i] = &Candidate{StateNode: pureStateNode(fmt.Sprintf("node-%d", i), "default", stateNodeOpts{}), NodePool: pool,
			Price: float64(n - i), DisruptionCost: 1}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	return w, cands
}

func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}

// TestMultiNodeSearchIsBoundedWhateverTheClusterSize: multi-node
// consolidation takes the MaxMultiNodeCandidates best candidates (the
// documented cut: the rest wait for single-node consolidation or a later
// pass) and binary-searches the prefix, so a pass costs at most
// ⌈log₂ 99⌉+1 = 7 what-ifs of at most 100 candidates, at 200 nodes as at
// 5,000, and still finds the largest prefix that can go.
func TestMultiNodeSearchIsBoundedWhateverTheClusterSize(t *testing.T) {
	opts := DefaultOptions()
	maxCalls := int(math.Ceil(math.Log2(float64(opts.MaxMultiNodeCandidates-1)))) + 1
	for _, n := range []int{200, 1000, 5000} {
		for _, fits := range []int{1, 37, 100} {
			t.Run(fmt.Sprintf("%d nodes, %d fit", n, fits), func(t *testing.T) {
				w, cands := scaleCandidates(n)
				sim := &countingSimulator{fits: fits}
				m := &MultiNodeConsolidation{consolidation{opts: opts}}
				cmd, err := m.ComputeCommand(t.Context(), w, sim, Budgets{"default": n}, cands...)
				if err != nil {
					t.Fatal(err)
				}
				if len(sim.calls) > maxCalls {
					t.Errorf("%d what-ifs, want at most %d", len(sim.calls), maxCalls)
				}
				top := names("node", 0, opts.MaxMultiNodeCandidates)
				for _, call := range sim.calls {
					if len(call) > opts.MaxMultiNodeCandidates || !slices.Equal(call, top[:len(call)]) {
						t.Fatalf("a what-if took %v, want a prefix of the %d best candidates", call, opts.MaxMultiNodeCandidates)
					}
				}
				want := 0
				if fits >= 2 {
					want = fits
				}
				if len(cmd.Candidates) != want {
					t.Errorf("command takes %d candidates, want the largest prefix that fits (%d)", len(cmd.Candidates), want)
				}
			})
		}
	}
}

// TestSingleNodeVisitsEveryCandidateInTurn: single-node consolidation
// simulates at most SingleNodeBatch candidates a pass and the next pass
// goes on after the last one, so over ⌈n/batch⌉ passes every one of 5,000
// candidates is tried once: its candidate set is not truncated.
func TestSingleNodeVisitsEveryCandidateInTurn(t *testing.T) {
	const n = 5000
	opts := DefaultOptions()
	w, cands := scaleCandidates(n)
	s := &SingleNodeConsolidation{consolidation: consolidation{opts: opts}}
	sim := &countingSimulator{}
	passes := (n + opts.SingleNodeBatch - 1) / opts.SingleNodeBatch
	for pass := range passes {
		before := len(sim.calls)
		if _, err := s.ComputeCommand(t.Context(), w, sim, Budgets{"default": n}, cands...); err != nil {
			t.Fatal(err)
		}
		if got := len(sim.calls) - before; got > opts.SingleNodeBatch {
			t.Fatalf("pass %d simulated %d candidates, want at most %d", pass, got, opts.SingleNodeBatch)
		}
	}
	var got []string
	for _, call := range sim.calls {
		got = append(got, call...)
	}
	if diff := cmp.Diff(names("node", 0, n), got); diff != "" {
		t.Errorf("candidates tried over %d passes, in order (-want,+got):\n%s", passes, diff)
	}
}
