package v1_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// monday is a Monday in UTC; the budget tests move around it.
var monday = time.Date(2026, time.March, 2, 0, 0, 0, 0, time.UTC)

func at(day time.Time, hour, minute int) time.Time {
	return day.Add(time.Duration(hour)*time.Hour + time.Duration(minute)*time.Minute)
}

func scheduled(nodes, schedule string, d time.Duration, reasons ...karpv1.DisruptionReason) karpv1.Budget {
	return karpv1.Budget{Nodes: nodes, Schedule: ptr.To(schedule), Duration: &metav1.Duration{Duration: d}, Reasons: reasons}
}

func TestBudgetIsActive(t *testing.T) {
	workHours := scheduled("0", "0 9 * * mon-fri", 8*time.Hour)
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		budget  karpv1.Budget
		now     time.Time
		want    bool
		wantErr bool
	}{
		"no schedule is always active":            {budget: karpv1.Budget{Nodes: "10%"}, now: monday, want: true},
		"inside the window":                       {budget: workHours, now: at(monday, 10, 0), want: true},
		"at the schedule hit":                     {budget: workHours, now: at(monday, 9, 0), want: true},
		"one minute before the window ends":       {budget: workHours, now: at(monday, 16, 59), want: true},
		"window end is exclusive":                 {budget: workHours, now: at(monday, 17, 0), want: false},
		"before the window":                       {budget: workHours, now: at(monday, 8, 59), want: false},
		"weekend":                                 {budget: workHours, now: at(monday.AddDate(0, 0, 5), 10, 0), want: false},
		"window spanning midnight":                {budget: scheduled("0", "0 22 * * *", 4*time.Hour), now: at(monday, 1, 30), want: true},
		"macro schedule":                          {budget: scheduled("0", "@daily", time.Hour), now: at(monday, 0, 30), want: true},
		"schedule is read in UTC, not now's zone": {budget: scheduled("0", "0 9 * * *", time.Hour), now: time.Date(2026, time.March, 2, 9, 30, 0, 0, newYork), want: false},
		"invalid schedule":                        {budget: scheduled("0", "not a cron", time.Hour), now: monday, wantErr: true},
		"schedule without duration":               {budget: karpv1.Budget{Nodes: "0", Schedule: ptr.To("@daily")}, now: monday, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.budget.IsActive(tc.now)
			if (err != nil) != tc.wantErr {
				t.Fatalf("IsActive() error = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("IsActive() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBudgetNextChange: NextChange names the window's next edge, and the
// budget's activity does not change on any minute before it.
func TestBudgetNextChange(t *testing.T) {
	workHours := scheduled("0", "0 9 * * mon-fri", 8*time.Hour)
	overlapping := scheduled("0", "*/10 * * * *", 30*time.Minute)
	tests := map[string]struct {
		budget karpv1.Budget
		from   time.Time
		want   time.Time
	}{
		"inside a window: its end":              {budget: workHours, from: at(monday, 10, 0), want: at(monday, 17, 0)},
		"at the window's end: the next hit":     {budget: workHours, from: at(monday, 17, 0), want: at(monday, 24+9, 0)},
		"before a window: its start":            {budget: workHours, from: at(monday, 8, 0), want: at(monday, 9, 0)},
		"friday evening: monday's start":        {budget: workHours, from: at(monday, 4*24+18, 0), want: at(monday, 7*24+9, 0)},
		"window spanning midnight: its end":     {budget: scheduled("0", "0 22 * * *", 4*time.Hour), from: at(monday, 23, 0), want: at(monday, 24+2, 0)},
		"overlapping windows: the next hit":     {budget: overlapping, from: at(monday, 1, 5), want: at(monday, 1, 10)},
		"a hit at the start of the interval":    {budget: workHours, from: at(monday, 9, 0), want: at(monday, 17, 0)},
		"one minute before the end of a window": {budget: workHours, from: at(monday, 16, 59), want: at(monday, 17, 0)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok, err := tc.budget.NextChange(tc.from)
			if err != nil || !ok {
				t.Fatalf("NextChange(%s) = %s, %v, %v", tc.from, got, ok, err)
			}
			if !got.Equal(tc.want) {
				t.Errorf("NextChange(%s) = %s, want %s", tc.from, got, tc.want)
			}
			was, _ := tc.budget.IsActive(tc.from)
			for m := tc.from.Add(time.Minute); m.Before(got); m = m.Add(time.Minute) {
				if now, _ := tc.budget.IsActive(m); now != was {
					t.Fatalf("activity changed at %s, before NextChange %s", m, got)
				}
			}
		})
	}
	if _, ok, err := (&karpv1.Budget{Nodes: "10%"}).NextChange(monday); ok || err != nil {
		t.Errorf("a budget without a schedule changes (ok=%v, err=%v)", ok, err)
	}
}

func TestBudgetGetAllowedDisruptions(t *testing.T) {
	tests := map[string]struct {
		budget   karpv1.Budget
		numNodes int
		want     int
		wantErr  bool
	}{
		"percent rounds up":             {budget: karpv1.Budget{Nodes: "10%"}, numNodes: 15, want: 2},
		"percent of exact multiple":     {budget: karpv1.Budget{Nodes: "10%"}, numNodes: 20, want: 2},
		"percent of one node":           {budget: karpv1.Budget{Nodes: "10%"}, numNodes: 1, want: 1},
		"percent of no nodes":           {budget: karpv1.Budget{Nodes: "10%"}, numNodes: 0, want: 0},
		"hundred percent":               {budget: karpv1.Budget{Nodes: "100%"}, numNodes: 7, want: 7},
		"zero percent":                  {budget: karpv1.Budget{Nodes: "0%"}, numNodes: 7, want: 0},
		"absolute count":                {budget: karpv1.Budget{Nodes: "5"}, numNodes: 3, want: 5},
		"absolute zero":                 {budget: karpv1.Budget{Nodes: "0"}, numNodes: 3, want: 0},
		"inactive budget is no limit":   {budget: scheduled("0", "0 9 * * *", time.Hour), numNodes: 3, want: math.MaxInt32},
		"invalid schedule fails closed": {budget: scheduled("5", "61 * * * *", time.Hour), numNodes: 3, want: 0, wantErr: true},
		"unparsable nodes fails closed": {budget: karpv1.Budget{Nodes: "many"}, numNodes: 3, want: 0, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.budget.GetAllowedDisruptions(at(monday, 12, 0), tc.numNodes)
			if (err != nil) != tc.wantErr {
				t.Fatalf("GetAllowedDisruptions() error = %v, wantErr %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("GetAllowedDisruptions() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestNodePoolGetAllowedDisruptionsByReason(t *testing.T) {
	noon := at(monday, 12, 0)
	tests := map[string]struct {
		budgets  []karpv1.Budget
		numNodes int
		want     map[karpv1.DisruptionReason]int
		wantErr  bool
	}{
		"no budgets allows everything": {
			numNodes: 10,
			want:     map[karpv1.DisruptionReason]int{karpv1.DisruptionReasonEmpty: math.MaxInt32, karpv1.DisruptionReasonDrifted: math.MaxInt32},
		},
		"reason-scoped budget applies only to its reasons": {
			budgets:  []karpv1.Budget{{Nodes: "10%"}, {Nodes: "0", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonDrifted}}},
			numNodes: 20,
			want: map[karpv1.DisruptionReason]int{
				karpv1.DisruptionReasonDrifted:       0,
				karpv1.DisruptionReasonEmpty:         2,
				karpv1.DisruptionReasonUnderutilized: 2,
			},
		},
		"most restrictive active budget wins": {
			budgets:  []karpv1.Budget{{Nodes: "50%"}, {Nodes: "3"}, scheduled("1", "0 12 * * *", time.Hour)},
			numNodes: 20,
			want:     map[karpv1.DisruptionReason]int{karpv1.DisruptionReasonEmpty: 1},
		},
		"inactive window does not restrict": {
			budgets:  []karpv1.Budget{{Nodes: "50%"}, scheduled("0", "0 9 * * sat", 8*time.Hour)},
			numNodes: 20,
			want:     map[karpv1.DisruptionReason]int{karpv1.DisruptionReasonEmpty: 10},
		},
		"invalid schedule blocks its reasons and reports an error": {
			budgets:  []karpv1.Budget{{Nodes: "10%"}, scheduled("5", "bad", time.Hour, karpv1.DisruptionReasonDrifted)},
			numNodes: 20,
			want:     map[karpv1.DisruptionReason]int{karpv1.DisruptionReasonDrifted: 0, karpv1.DisruptionReasonEmpty: 2},
			wantErr:  true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nodePool := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Disruption: karpv1.Disruption{Budgets: tc.budgets}}}
			got := map[karpv1.DisruptionReason]int{}
			for reason := range tc.want {
				n, err := nodePool.GetAllowedDisruptionsByReason(noon, tc.numNodes, reason)
				if (err != nil) != tc.wantErr {
					t.Fatalf("reason %s: error = %v, wantErr %v", reason, err, tc.wantErr)
				}
				got[reason] = n
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("allowed disruptions (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestValidateBudgets(t *testing.T) {
	tests := map[string]struct {
		budgets []karpv1.Budget
		// want are substrings of the error, in order; none: valid.
		want []string
	}{
		"no budgets":                  {},
		"percent and count":           {budgets: []karpv1.Budget{{Nodes: "10%"}, {Nodes: "3"}}},
		"cron schedule":               {budgets: []karpv1.Budget{scheduled("0", "0 9 * * mon-fri", time.Hour)}},
		"macro schedule":              {budgets: []karpv1.Budget{scheduled("0", "@daily", time.Hour)}},
		"minute out of range":         {budgets: []karpv1.Budget{{Nodes: "1"}, scheduled("0", "61 * * * *", time.Hour)}, want: []string{`budgets[1]: parsing schedule "61 * * * *"`, "above maximum"}},
		"six fields":                  {budgets: []karpv1.Budget{scheduled("0", "0 0 9 * * *", time.Hour)}, want: []string{`budgets[0]: parsing schedule "0 0 9 * * *"`, "expected exactly 5 fields"}},
		"time zone prefix":            {budgets: []karpv1.Budget{scheduled("0", "CRON_TZ=Mars/Olympus 0 9 * * *", time.Hour)}, want: []string{"budgets[0]: parsing schedule"}},
		"node count overflowing int":  {budgets: []karpv1.Budget{{Nodes: "99999999999999999999"}}, want: []string{`budgets[0]: parsing nodes "99999999999999999999"`, "out of range"}},
		"every bad budget is counted": {budgets: []karpv1.Budget{scheduled("0", "61 * * * *", time.Hour), {Nodes: "99999999999999999999"}}, want: []string{"budgets[0]", "budgets[1]"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			np := &karpv1.NodePool{Spec: karpv1.NodePoolSpec{Disruption: karpv1.Disruption{Budgets: tc.budgets}}}
			err := np.ValidateBudgets()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("ValidateBudgets() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateBudgets() = nil, want an error containing %q", tc.want)
			}
			rest := err.Error()
			for _, want := range tc.want {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("ValidateBudgets() = %q, want %q (in order)", err, tc.want)
				}
				rest = rest[i+len(want):]
			}
		})
	}
}
