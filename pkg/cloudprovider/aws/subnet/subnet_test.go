package subnet_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/subnet"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

func nodeClass(terms ...awsv1.SubnetSelectorTerm) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "uid-1", Generation: 1},
		Spec:       awsv1.EC2NodeClassSpec{SubnetSelectorTerms: terms},
	}
}

func network() *fake.EC2 {
	e := fake.NewEC2()
	e.AddSubnets(
		fake.NewSubnet("subnet-a", "us-west-2a", "usw2-az1", 100, map[string]string{"karpenter.sh/discovery": "prod", "Name": "private-a"}),
		fake.NewSubnet("subnet-b", "us-west-2b", "usw2-az2", 300, map[string]string{"karpenter.sh/discovery": "prod", "Name": "private-b"}),
		fake.NewSubnet("subnet-c", "us-west-2c", "usw2-az3", 300, map[string]string{"karpenter.sh/discovery": "staging"}),
		fake.NewSubnet("subnet-d", "us-west-2a", "usw2-az1", 50, map[string]string{"Name": "public-a"}),
	)
	return e
}

func ids(subnets []ec2types.Subnet) []string {
	out := []string{}
	for _, s := range subnets {
		out = append(out, aws.ToString(s.SubnetId))
	}
	return out
}

func TestListSelectsByTermsAsUpstream(t *testing.T) {
	for name, tc := range map[string]struct {
		terms []awsv1.SubnetSelectorTerm
		want  []string
	}{
		"a tag value":                            {terms: []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "prod"}}}, want: []string{"subnet-a", "subnet-b"}},
		"a wildcard value requires only the key": {terms: []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "*"}}}, want: []string{"subnet-a", "subnet-b", "subnet-c"}},
		"tags within a term are ANDed":           {terms: []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "prod", "Name": "private-b"}}}, want: []string{"subnet-b"}},
		"terms are ORed and de-duplicated": {terms: []awsv1.SubnetSelectorTerm{
			{Tags: map[string]string{"karpenter.sh/discovery": "prod"}}, {ID: "subnet-b"}, {ID: "subnet-d"},
		}, want: []string{"subnet-a", "subnet-b", "subnet-d"}},
		"ids":                              {terms: []awsv1.SubnetSelectorTerm{{ID: "subnet-c"}, {ID: "subnet-a"}}, want: []string{"subnet-a", "subnet-c"}},
		"an unknown id matches nothing":    {terms: []awsv1.SubnetSelectorTerm{{ID: "subnet-zzz"}}, want: []string{}},
		"an unmatched tag matches nothing": {terms: []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "dev"}}}, want: []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			p := subnet.NewProvider(network(), clocktesting.NewFakeClock(epoch), subnet.DefaultRefreshInterval)
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

func TestListPaginates(t *testing.T) {
	e := fake.NewEC2()
	for i := range 1200 {
		e.AddSubnets(fake.NewSubnet(fmt.Sprintf("subnet-%04d", i), "us-west-2a", "usw2-az1", 10, map[string]string{"team": "big"}))
	}
	p := subnet.NewProvider(e, clocktesting.NewFakeClock(epoch), time.Minute)
	got, err := p.List(t.Context(), nodeClass(awsv1.SubnetSelectorTerm{Tags: map[string]string{"team": "big"}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1200 {
		t.Errorf("listed %d subnets, want 1200", len(got))
	}
	if calls := e.Calls("DescribeSubnets"); calls != 3 {
		t.Errorf("%d DescribeSubnets calls, want 3 pages of 500", calls)
	}
}

func TestListCachesPerGenerationForTheRefreshInterval(t *testing.T) {
	e := network()
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	p := subnet.NewProvider(e, clk, time.Minute)
	nc := nodeClass(awsv1.SubnetSelectorTerm{Tags: map[string]string{"karpenter.sh/discovery": "prod"}})
	list := func() []string {
		t.Helper()
		got, err := p.List(t.Context(), nc)
		if err != nil {
			t.Fatal(err)
		}
		return ids(got)
	}
	list()
	e.AddSubnets(fake.NewSubnet("subnet-e", "us-west-2c", "usw2-az3", 10, map[string]string{"karpenter.sh/discovery": "prod"}))
	if got := list(); len(got) != 2 || e.Calls("DescribeSubnets") != 1 {
		t.Errorf("within the interval: %v after %d calls, want the cached two after 1", got, e.Calls("DescribeSubnets"))
	}
	clk.Step(61 * time.Second)
	if got := list(); len(got) != 3 {
		t.Errorf("after the interval: %v, want the new subnet too", got)
	}
	e.DeleteSubnet("subnet-e")
	nc.Generation = 2
	if got := list(); len(got) != 2 {
		t.Errorf("after a spec change: %v, want a fresh listing", got)
	}
}

func TestListReturnsEC2Errors(t *testing.T) {
	e := network()
	e.FailNext("DescribeSubnets", 1, fake.Throttling("DescribeSubnets"))
	p := subnet.NewProvider(e, clocktesting.NewFakeClock(epoch), time.Minute)
	nc := nodeClass(awsv1.SubnetSelectorTerm{ID: "subnet-a"})
	if _, err := p.List(t.Context(), nc); err == nil {
		t.Fatal("List succeeded during throttling")
	}
	got, err := p.List(t.Context(), nc)
	if err != nil || len(got) != 1 {
		t.Errorf("after the fault: %v, %v; want subnet-a (a failure is not cached)", ids(got), err)
	}
}

func TestStatusOrdersByFreeAddressesThenID(t *testing.T) {
	e := network()
	p := subnet.NewProvider(e, clocktesting.NewFakeClock(epoch), time.Minute)
	got, err := p.List(t.Context(), nodeClass(awsv1.SubnetSelectorTerm{Tags: map[string]string{"karpenter.sh/discovery": "*"}}, awsv1.SubnetSelectorTerm{ID: "subnet-d"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []awsv1.Subnet{
		{ID: "subnet-b", Zone: "us-west-2b", ZoneID: "usw2-az2"},
		{ID: "subnet-c", Zone: "us-west-2c", ZoneID: "usw2-az3"},
		{ID: "subnet-a", Zone: "us-west-2a", ZoneID: "usw2-az1"},
		{ID: "subnet-d", Zone: "us-west-2a", ZoneID: "usw2-az1"},
	}
	if diff := cmp.Diff(want, subnet.Status(got)); diff != "" {
		t.Errorf("(-want,+got)\n%s", diff)
	}
	if n, ok := p.AvailableIPs("subnet-c"); !ok || n != 300 {
		t.Errorf("AvailableIPs(subnet-c) = %d, %v; want 300, true", n, ok)
	}
}

func TestZonalSubnetsForLaunchSpreadsOverAZonesSubnets(t *testing.T) {
	e := fake.NewEC2()
	e.AddSubnets(
		fake.NewSubnet("subnet-a1", "us-west-2a", "usw2-az1", 100, map[string]string{"k": "v"}),
		fake.NewSubnet("subnet-a2", "us-west-2a", "usw2-az1", 90, map[string]string{"k": "v"}),
		fake.NewSubnet("subnet-b1", "us-west-2b", "usw2-az2", 10, map[string]string{"k": "v"}),
	)
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	p := subnet.NewProvider(e, clk, time.Minute)
	nc := nodeClass(awsv1.SubnetSelectorTerm{Tags: map[string]string{"k": "v"}})
	listed, err := p.List(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	nc.Status.Subnets = subnet.Status(listed)
	pick := func(skip func(string) bool) map[string]string {
		out := map[string]string{}
		for zone, s := range p.ZonalSubnetsForLaunch(nc, 20, skip) {
			out[zone] = s.ID
		}
		return out
	}

	if diff := cmp.Diff(map[string]string{"us-west-2a": "subnet-a1", "us-west-2b": "subnet-b1"}, pick(nil)); diff != "" {
		t.Errorf("first launch (-want,+got)\n%s", diff)
	}
	// subnet-a1 is now predicted at 80 free addresses, below subnet-a2's 90.
	if got := pick(nil)["us-west-2a"]; got != "subnet-a2" {
		t.Errorf("second launch in us-west-2a: %s, want subnet-a2", got)
	}
	p.ReleaseIPs([]string{"subnet-a1", "subnet-a2"}, 20)
	if got := pick(nil)["us-west-2a"]; got != "subnet-a1" {
		t.Errorf("after the unused addresses came back: %s, want subnet-a1", got)
	}
	if got := pick(func(id string) bool { return id == "subnet-a1" })["us-west-2a"]; got != "subnet-a2" {
		t.Errorf("with subnet-a1 skipped: %s, want subnet-a2", got)
	}

	// A new listing replaces the predictions with EC2's counts.
	e.SetAvailableIPs("subnet-a1", 50)
	clk.Step(61 * time.Second)
	if _, err := p.List(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	if got := pick(nil)["us-west-2a"]; got != "subnet-a2" {
		t.Errorf("after a listing with subnet-a1 at 50 free: %s, want subnet-a2 (90)", got)
	}
}

// epoch is the fake clocks' start.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestResolveNamesTheTermsThatMatchedNothing(t *testing.T) {
	p := subnet.NewProvider(network(), clocktesting.NewFakeClock(epoch), time.Minute)
	got, err := p.Resolve(t.Context(), nodeClass(
		awsv1.SubnetSelectorTerm{ID: "subnet-a"},
		awsv1.SubnetSelectorTerm{ID: "subnet-typo"},
		awsv1.SubnetSelectorTerm{Tags: map[string]string{"karpenter.sh/discovery": "prod"}},
		awsv1.SubnetSelectorTerm{Tags: map[string]string{"karpenter.sh/discovery": "dev"}},
	))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 3}, got.Unmatched); diff != "" {
		t.Errorf("unmatched terms (-want,+got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"subnet-a", "subnet-b"}, ids(got.Selected)); diff != "" {
		t.Errorf("subnets (-want,+got)\n%s", diff)
	}
}
