package capacityreservation_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/capacityreservation"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func nodeClass(terms ...awsv1.CapacityReservationSelectorTerm) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "uid-1", Generation: 1},
		Spec:       awsv1.EC2NodeClassSpec{CapacityReservationSelectorTerms: terms},
	}
}

func account() *fake.EC2 {
	e := fake.NewEC2()
	targeted := fake.NewCapacityReservation("cr-targeted", "p5.48xlarge", "us-west-2b", 2, map[string]string{"team": "ml"})
	targeted.InstanceMatchCriteria = ec2types.InstanceMatchCriteriaTargeted
	foreign := fake.NewCapacityReservation("cr-foreign", "m5.large", "us-west-2a", 4, map[string]string{"team": "ml"})
	foreign.OwnerId = aws.String("999999999999")
	expired := fake.NewCapacityReservation("cr-expired", "m5.large", "us-west-2a", 4, map[string]string{"team": "ml"})
	expired.State = ec2types.CapacityReservationStateExpired
	ended := fake.NewCapacityReservation("cr-ended", "m5.large", "us-west-2a", 4, map[string]string{"team": "ml"})
	ended.EndDate = aws.Time(epoch.Add(-time.Minute))
	e.AddCapacityReservations(
		fake.NewCapacityReservation("cr-open", "m5.large", "us-west-2a", 3, map[string]string{"team": "web"}),
		targeted, foreign, expired, ended,
	)
	return e
}

func ids(rs []ec2types.CapacityReservation) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, aws.ToString(r.CapacityReservationId))
	}
	return out
}

func TestListSelectsActiveReservationsByTerm(t *testing.T) {
	for name, tc := range map[string]struct {
		terms []awsv1.CapacityReservationSelectorTerm
		want  []string
	}{
		"an id":                             {terms: []awsv1.CapacityReservationSelectorTerm{{ID: "cr-open"}}, want: []string{"cr-open"}},
		"an id that does not exist":         {terms: []awsv1.CapacityReservationSelectorTerm{{ID: "cr-gone"}, {ID: "cr-open"}}, want: []string{"cr-open"}},
		"tags: active and unended only":     {terms: []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "ml"}}}, want: []string{"cr-foreign", "cr-targeted"}},
		"tags and an owner":                 {terms: []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "ml"}, OwnerID: fake.AccountID}}, want: []string{"cr-targeted"}},
		"match criteria":                    {terms: []awsv1.CapacityReservationSelectorTerm{{InstanceMatchCriteria: "open"}}, want: []string{"cr-foreign", "cr-open"}},
		"terms are ORed and de-duplicated":  {terms: []awsv1.CapacityReservationSelectorTerm{{ID: "cr-open"}, {Tags: map[string]string{"team": "*"}, OwnerID: fake.AccountID}}, want: []string{"cr-open", "cr-targeted"}},
		"no terms":                          {terms: nil, want: []string{}},
		"an expired reservation by id":      {terms: []awsv1.CapacityReservationSelectorTerm{{ID: "cr-expired"}}, want: []string{}},
		"an ended reservation still listed": {terms: []awsv1.CapacityReservationSelectorTerm{{ID: "cr-ended"}}, want: []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			p := capacityreservation.NewProvider(account(), clocktesting.NewFakeClock(epoch))
			got, err := p.List(t.Context(), nodeClass(tc.terms...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(got)); diff != "" {
				t.Errorf("(-want,+got)\n%s", diff)
			}
		})
	}
}

func TestListCachesQueriesForAMinute(t *testing.T) {
	e := account()
	clk := clocktesting.NewFakeClock(epoch)
	p := capacityreservation.NewProvider(e, clk)
	nc := nodeClass(awsv1.CapacityReservationSelectorTerm{Tags: map[string]string{"team": "web"}})
	if _, err := p.List(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	e.SetCapacityReservationState("cr-open", ec2types.CapacityReservationStateCancelled)
	got, _ := p.List(t.Context(), nc)
	if len(got) != 1 || e.Calls("DescribeCapacityReservations") != 1 {
		t.Errorf("within the minute: %v after %d calls, want the cached cr-open after 1", ids(got), e.Calls("DescribeCapacityReservations"))
	}
	clk.Step(capacityreservation.QueryTTL + time.Second)
	if got, _ = p.List(t.Context(), nc); len(got) != 0 {
		t.Errorf("after the minute: %v, want the cancelled reservation gone", ids(got))
	}
}

func TestListReturnsEC2Errors(t *testing.T) {
	e := account()
	e.FailNext("DescribeCapacityReservations", 1, fake.Throttling("DescribeCapacityReservations"))
	p := capacityreservation.NewProvider(e, clocktesting.NewFakeClock(epoch))
	if _, err := p.List(t.Context(), nodeClass(awsv1.CapacityReservationSelectorTerm{ID: "cr-open"})); err == nil {
		t.Error("List succeeded while EC2 throttled")
	}
}

func TestStatus(t *testing.T) {
	end := epoch.Add(30 * time.Minute)
	block := fake.NewCapacityReservation("cr-block", "p5.48xlarge", "us-west-2a", 1, nil)
	block.ReservationType, block.EndDate = ec2types.CapacityReservationTypeCapacityBlock, &end
	later := fake.NewCapacityReservation("cr-block-later", "p5.48xlarge", "us-west-2a", 1, nil)
	laterEnd := epoch.Add(2 * time.Hour)
	later.ReservationType, later.EndDate, later.Interruptible = ec2types.CapacityReservationTypeCapacityBlock, &laterEnd, aws.Bool(true)
	untyped := fake.NewCapacityReservation("cr-untyped", "m5.large", "us-west-2b", 1, nil)
	untyped.ReservationType = ""
	odd := fake.NewCapacityReservation("cr-odd", "m5.large", "us-west-2b", 1, nil)
	odd.InstanceMatchCriteria = "some-future-criteria"

	got := capacityreservation.Status([]ec2types.CapacityReservation{untyped, later, block, odd}, epoch)

	want := []awsv1.CapacityReservation{
		{ID: "cr-block", AvailabilityZone: "us-west-2a", InstanceType: "p5.48xlarge", InstanceMatchCriteria: "open", OwnerID: fake.AccountID,
			ReservationType: "capacity-block", State: "expiring", EndTime: &metav1.Time{Time: end}},
		{ID: "cr-block-later", AvailabilityZone: "us-west-2a", InstanceType: "p5.48xlarge", InstanceMatchCriteria: "open", OwnerID: fake.AccountID,
			ReservationType: "capacity-block", State: "active", Interruptible: true, EndTime: &metav1.Time{Time: laterEnd}},
		{ID: "cr-untyped", AvailabilityZone: "us-west-2b", InstanceType: "m5.large", InstanceMatchCriteria: "open", OwnerID: fake.AccountID,
			ReservationType: "default", State: "active"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got)\n%s", diff)
	}
	if d := capacityreservation.RequeueAfter([]ec2types.CapacityReservation{block, later}, epoch, time.Minute); d != time.Minute {
		t.Errorf("RequeueAfter = %v, want the interval (nothing changes within a minute)", d)
	}
	if d := capacityreservation.RequeueAfter([]ec2types.CapacityReservation{later}, laterEnd.Add(-ExpiringIn(20*time.Second)), time.Minute); d != 20*time.Second {
		t.Errorf("RequeueAfter = %v, want 20s (the block turns expiring)", d)
	}
}

// ExpiringIn is the time before a block's end at which it turns expiring,
// less d.
func ExpiringIn(d time.Duration) time.Duration { return capacityreservation.ExpiringWindow + d }

func TestAvailabilityAccounting(t *testing.T) {
	e := account()
	clk := clocktesting.NewFakeClock(epoch)
	p := capacityreservation.NewProvider(e, clk)
	if _, ok := p.AvailableInstanceCount("cr-open"); ok {
		t.Fatal("a count before any listing")
	}
	if _, err := p.List(t.Context(), nodeClass(awsv1.CapacityReservationSelectorTerm{ID: "cr-open"})); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		t.Helper()
		n, ok := p.AvailableInstanceCount("cr-open")
		if !ok {
			t.Fatal("no count after a listing")
		}
		return n
	}
	if n := count(); n != 3 {
		t.Fatalf("listed count %d, want 3", n)
	}
	clk.Step(time.Second)
	p.MarkLaunched("cr-open", clk.Now())
	p.MarkLaunched("cr-open", epoch.Add(-time.Hour)) // the listing already counted it
	if n := count(); n != 2 {
		t.Errorf("after one launch: %d, want 2", n)
	}
	p.MarkTerminated("cr-open")
	if n := count(); n != 3 {
		t.Errorf("after a termination: %d, want 3", n)
	}
	p.MarkUnavailable("cr-open")
	if n := count(); n != 0 {
		t.Errorf("after a capacity error: %d, want 0", n)
	}
	p.MarkLaunched("cr-open", clk.Now())
	if n := count(); n != 0 {
		t.Errorf("a launch past zero: %d, want 0", n)
	}
	clk.Step(capacityreservation.AvailabilityTTL + time.Second)
	if _, ok := p.AvailableInstanceCount("cr-open"); ok {
		t.Error("a count a day after the last listing")
	}
}

func TestGetDescribesActiveReservationsByID(t *testing.T) {
	e := account()
	p := capacityreservation.NewProvider(e, clocktesting.NewFakeClock(epoch))
	got, err := p.Get(t.Context(), "cr-targeted", "cr-gone", "cr-expired", "cr-open", "cr-open", "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"cr-open", "cr-targeted"}, ids(got)); diff != "" {
		t.Errorf("(-want,+got)\n%s", diff)
	}
	if _, err := p.Get(t.Context(), "cr-open", "cr-targeted"); err != nil {
		t.Fatal(err)
	}
	// One query per ID, each asked once within the cache's minute.
	if n := e.Calls("DescribeCapacityReservations"); n != 4 {
		t.Errorf("%d DescribeCapacityReservations calls, want 4 (one per distinct ID)", n)
	}
}

func TestExpiring(t *testing.T) {
	end := epoch.Add(time.Hour)
	block := fake.NewCapacityBlock("cr-block", "p5.48xlarge", "us-west-2a", 1, end)
	odcr := fake.NewCapacityReservation("cr-odcr", "m5.large", "us-west-2a", 1, nil)
	odcr.EndDate = &end
	for name, tc := range map[string]struct {
		r    ec2types.CapacityReservation
		at   time.Time
		want bool
	}{
		"a block 41 minutes before its end":      {r: block, at: end.Add(-41 * time.Minute)},
		"a block 40 minutes before its end":      {r: block, at: end.Add(-40 * time.Minute), want: true},
		"a block at its end":                     {r: block, at: end, want: true},
		"an ODCR 10 minutes before its end date": {r: odcr, at: end.Add(-10 * time.Minute)},
	} {
		if got := capacityreservation.Expiring(tc.r, tc.at); got != tc.want {
			t.Errorf("%s: expiring %v, want %v", name, got, tc.want)
		}
	}
}
