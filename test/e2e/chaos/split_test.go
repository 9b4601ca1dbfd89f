package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// poolClaims are the state's NodeClaims of the pool.
func (s *clusterState) poolClaims(pool string) []karpv1.NodeClaim {
	var out []karpv1.NodeClaim
	for _, nc := range s.claims {
		if nc.Labels[karpv1.NodePoolLabelKey] == pool {
			out = append(out, nc)
		}
	}
	return out
}

// oneSplitNode is the scale-out's own condition on the split pool: its
// five pods on one node (if they first landed on several, consolidation
// merges them).
func oneSplitNode(_ context.Context, s *clusterState) string {
	if claims := s.poolClaims(poolSplit); len(claims) != 1 {
		return fmt.Sprintf("the split pool has %d NodeClaims, want 1 holding its pods", len(claims))
	}
	return ""
}

// splitMove follows the split pool through the scale-down: its one
// NodeClaim must be replaced by two or more new ones.
type splitMove struct {
	// from is the pool's one NodeClaim when the scale-down starts.
	from karpv1.NodeClaim
	// together are the most new NodeClaims of the pool seen while from
	// was still there: its replacements, launched before it goes.
	together []string
}

// newSplitMove reads the split pool's one NodeClaim.
func newSplitMove(t *testing.T, cl client.Client) *splitMove {
	s, err := readState(t.Context(), cl)
	if err != nil {
		t.Fatal(err)
	}
	claims := s.poolClaims(poolSplit)
	if len(claims) != 1 {
		t.Fatalf("the split pool has %d NodeClaims before the scale-down, want 1", len(claims))
	}
	return &splitMove{from: claims[0]}
}

// observe is the scale-down's own condition on the split pool: its
// original NodeClaim is gone. On the way it records the new NodeClaims
// seen next to the original.
func (m *splitMove) observe(_ context.Context, s *clusterState) string {
	fromLive := false
	var others []string
	for _, nc := range s.poolClaims(poolSplit) {
		if nc.Name == m.from.Name {
			fromLive = true
		} else {
			others = append(others, nc.Name)
		}
	}
	if !fromLive {
		return ""
	}
	if len(others) > len(m.together) {
		m.together = others
	}
	return fmt.Sprintf("the split pool's NodeClaim %s is not replaced yet (%d new NodeClaims)", m.from.Name, len(others))
}

// verify checks, once the scale-down settled, that karp replaced the
// split pool's one node by two or more cheaper ones in one command: the
// pool ends with two or more NodeClaims, all new and together cheaper
// than the original, and either they were seen next to the original
// (replacements launch before their candidate goes) or the original node's
// DisruptionLaunching event names two or more replacements.
func (m *splitMove) verify(t *testing.T, cl client.Client) {
	ctx := t.Context()
	s, err := readState(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var now []string
	for _, nc := range s.poolClaims(poolSplit) {
		now = append(now, fmt.Sprintf("%s (%s)", nc.Name, nc.Labels[corev1.LabelInstanceTypeStable]))
	}
	what := fmt.Sprintf("NodeClaim %s (%s)", m.from.Name, m.from.Labels[corev1.LabelInstanceTypeStable])
	if len(now) < 2 {
		pods := len(s.without(poolSplit).pods)
		framework.Errorf(t, "1→N consolidation: the split pool's %s, holding %d pods after the scale-down, was replaced by %d NodeClaims [%s], want 2 or more",
			what, len(s.pods)-pods, len(now), strings.Join(now, ", "))
		return
	}
	before, err := pricePerHour([]karpv1.NodeClaim{m.from})
	if err != nil {
		t.Fatal(err)
	}
	after, err := pricePerHour(s.poolClaims(poolSplit))
	if err != nil {
		t.Fatal(err)
	}
	if after >= before {
		framework.Errorf(t, "1→N consolidation: the split pool's %s ($%.4f/hour) ended as [%s] at $%.4f/hour, not cheaper",
			what, before, strings.Join(now, ", "), after)
	}
	launched := m.launchingEvent(t, cl)
	switch {
	case len(m.together) >= 2:
		t.Logf("1→N consolidation: %s ($%.4f/hour) replaced by [%s] ($%.4f/hour); %d replacements seen next to it; event: %q",
			what, before, strings.Join(now, ", "), after, len(m.together), launched)
	case len(launchedNames(launched)) >= 2:
		t.Logf("1→N consolidation: %s ($%.4f/hour) replaced by [%s] ($%.4f/hour); event: %q",
			what, before, strings.Join(now, ", "), after, launched)
	default:
		framework.Errorf(t, "1→N consolidation: the split pool's %s ended as [%s], but no command replacing it by 2 or more NodeClaims was seen: at most %d new NodeClaims next to it, %s event %q",
			what, strings.Join(now, ", "), len(m.together), disruption.ReasonDisruptionLaunching, launched)
	}
}

// launchingEvent is the message of the DisruptionLaunching event on the
// original NodeClaim's node ("" when there is none).
func (m *splitMove) launchingEvent(t *testing.T, cl client.Client) string {
	if m.from.Status.NodeName == "" {
		return ""
	}
	var events corev1.EventList
	if err := cl.List(t.Context(), &events, client.MatchingFields{"involvedObject.name": m.from.Status.NodeName}); err != nil {
		t.Logf("listing the events of node %s: %v", m.from.Status.NodeName, err)
		return ""
	}
	for _, e := range events.Items {
		if e.Reason == disruption.ReasonDisruptionLaunching && e.InvolvedObject.Kind == "Node" {
			return e.Message
		}
	}
	return ""
}

// launchedNames are the replacements a DisruptionLaunching message names
// ("Disrupting node: ..., launching a, b").
func launchedNames(msg string) []string {
	_, names, ok := strings.Cut(msg, ", launching ")
	if !ok {
		return nil
	}
	return strings.Split(names, ", ")
}
