package validation_test

import (
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodepool/validation"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

// TestInvalidBudgetIsNamedOnTheNodePool: a budget schedule the CRD's
// five-field pattern lets through but that is no cron expression used to
// be only a log line of the disruption controller, while the budget
// silently allowed no disruptions. The NodePool now says so in a False
// DisruptionBudgetsValid condition and a warning event naming the budget;
// it stays Ready (provisioning is unaffected), and a fixed NodePool loses
// the condition.
func TestInvalidBudgetIsNamedOnTheNodePool(t *testing.T) {
	h.Reset(t)
	c := validation.NewController(h.Client, h.Clock).WithRecorder(h.Recorder)
	np := test.MakeNodePool("bad-budget").Budgets(karpv1.Budget{Nodes: "10%"},
		karpv1.Budget{Nodes: "0", Schedule: ptr.To("61 * * * *"), Duration: &metav1.Duration{Duration: time.Hour}}).Obj()
	h.Create(t, np)
	if _, err := operatortest.Reconcile(t, h, c, np.Name); err != nil {
		t.Fatal(err)
	}

	got := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: np.Name}}
	h.Get(t, got)
	cond := got.StatusConditions().Get(validation.ConditionTypeDisruptionBudgetsValid)
	want := `budgets[1]: parsing schedule "61 * * * *"`
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != validation.ReasonInvalidDisruptionBudget ||
		!strings.Contains(cond.Message, want) || !strings.Contains(cond.Message, "allows no disruptions") {
		t.Fatalf("DisruptionBudgetsValid = %+v, want False/%s naming %s and what it means", cond, validation.ReasonInvalidDisruptionBudget, want)
	}
	if v := got.StatusConditions().Get(karpv1.ConditionTypeValidationSucceeded); v == nil || v.Status != metav1.ConditionTrue {
		t.Errorf("ValidationSucceeded = %+v, want True: a bad budget does not stop provisioning", v)
	}
	h.WaitForEvent(t, "NodePool", np.Name, validation.ReasonInvalidDisruptionBudget)
	if note := eventNote(t, np.Name, validation.ReasonInvalidDisruptionBudget); !strings.Contains(note, want) {
		t.Errorf("event note %q does not name %s", note, want)
	}

	got.Spec.Disruption.Budgets = got.Spec.Disruption.Budgets[:1]
	if err := h.Env.Client.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	if _, err := operatortest.Reconcile(t, h, c, np.Name); err != nil {
		t.Fatal(err)
	}
	fixed := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: np.Name}}
	h.Get(t, fixed)
	if cond := fixed.StatusConditions().Get(validation.ConditionTypeDisruptionBudgetsValid); cond != nil {
		t.Errorf("fixed NodePool still has DisruptionBudgetsValid = %+v, want none", cond)
	}
}

// eventNote is the note of the NodePool's event with the reason.
func eventNote(t *testing.T, name, reason string) string {
	t.Helper()
	var list eventsv1.EventList
	if err := h.Env.Client.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Regarding.Kind == "NodePool" && e.Regarding.Name == name && e.Reason == reason {
			return e.Note
		}
	}
	t.Fatalf("no %s event about NodePool %s", reason, name)
	return ""
}
