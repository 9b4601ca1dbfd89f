package securitygroup_test

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
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/securitygroup"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

func nodeClass(terms ...awsv1.SecurityGroupSelectorTerm) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default", UID: "uid-1", Generation: 1},
		Spec:       awsv1.EC2NodeClassSpec{SecurityGroupSelectorTerms: terms},
	}
}

func network() *fake.EC2 {
	e := fake.NewEC2()
	e.AddSecurityGroups(
		fake.NewSecurityGroup("sg-1", "eks-cluster-sg", map[string]string{"karpenter.sh/discovery": "prod"}),
		fake.NewSecurityGroup("sg-2", "nodes", map[string]string{"karpenter.sh/discovery": "prod", "Name": "nodes-tag"}),
		fake.NewSecurityGroup("sg-3", "staging", map[string]string{"karpenter.sh/discovery": "staging"}),
		fake.NewSecurityGroup("sg-4", "default", nil),
	)
	return e
}

func ids(groups []ec2types.SecurityGroup) []string {
	out := []string{}
	for _, g := range groups {
		out = append(out, aws.ToString(g.GroupId))
	}
	return out
}

func TestListSelectsByTermsAsUpstream(t *testing.T) {
	for name, tc := range map[string]struct {
		terms []awsv1.SecurityGroupSelectorTerm
		want  []string
	}{
		"a tag value":                                {terms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "prod"}}}, want: []string{"sg-1", "sg-2"}},
		"a wildcard value requires only the key":     {terms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "*"}}}, want: []string{"sg-1", "sg-2", "sg-3"}},
		"tags within a term are ANDed":               {terms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "prod", "Name": "nodes-tag"}}}, want: []string{"sg-2"}},
		"a name is the group name, not the Name tag": {terms: []awsv1.SecurityGroupSelectorTerm{{Name: "nodes-tag"}}, want: []string{}},
		"names": {terms: []awsv1.SecurityGroupSelectorTerm{{Name: "default"}, {Name: "staging"}}, want: []string{"sg-3", "sg-4"}},
		"ids, names and tags are ORed and de-duplicated": {terms: []awsv1.SecurityGroupSelectorTerm{
			{ID: "sg-4"}, {Name: "nodes"}, {Tags: map[string]string{"karpenter.sh/discovery": "prod"}},
		}, want: []string{"sg-1", "sg-2", "sg-4"}},
		"an unknown id matches nothing": {terms: []awsv1.SecurityGroupSelectorTerm{{ID: "sg-zzz"}}, want: []string{}},
	} {
		t.Run(name, func(t *testing.T) {
			p := securitygroup.NewProvider(network(), clocktesting.NewFakeClock(epoch))
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
	for i := range 700 {
		e.AddSecurityGroups(fake.NewSecurityGroup(fmt.Sprintf("sg-%04d", i), fmt.Sprintf("g%d", i), map[string]string{"team": "big"}))
	}
	p := securitygroup.NewProvider(e, clocktesting.NewFakeClock(epoch))
	got, err := p.List(t.Context(), nodeClass(awsv1.SecurityGroupSelectorTerm{Tags: map[string]string{"team": "big"}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 700 || e.Calls("DescribeSecurityGroups") != 2 {
		t.Errorf("listed %d groups in %d calls, want 700 in 2 pages", len(got), e.Calls("DescribeSecurityGroups"))
	}
}

func TestListCachesPerGenerationForAMinute(t *testing.T) {
	e := network()
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	p := securitygroup.NewProvider(e, clk)
	nc := nodeClass(awsv1.SecurityGroupSelectorTerm{Tags: map[string]string{"karpenter.sh/discovery": "prod"}})
	list := func() []string {
		t.Helper()
		got, err := p.List(t.Context(), nc)
		if err != nil {
			t.Fatal(err)
		}
		return ids(got)
	}
	list()
	e.DeleteSecurityGroup("sg-2")
	if got := list(); len(got) != 2 {
		t.Errorf("within the minute: %v, want the cached two", got)
	}
	clk.Step(61 * time.Second)
	if got := list(); len(got) != 1 {
		t.Errorf("after the minute: %v, want sg-1 only", got)
	}
	e.AddSecurityGroups(fake.NewSecurityGroup("sg-2", "nodes", map[string]string{"karpenter.sh/discovery": "prod"}))
	nc.Generation = 2
	if got := list(); len(got) != 2 {
		t.Errorf("after a spec change: %v, want a fresh listing", got)
	}
}

func TestListReturnsEC2Errors(t *testing.T) {
	e := network()
	e.FailNext("DescribeSecurityGroups", 1, fake.APIError("UnauthorizedOperation", "You are not authorized to perform this operation."))
	p := securitygroup.NewProvider(e, clocktesting.NewFakeClock(epoch))
	if _, err := p.List(t.Context(), nodeClass(awsv1.SecurityGroupSelectorTerm{ID: "sg-1"})); err == nil {
		t.Fatal("List succeeded while EC2 refused")
	}
}

func TestStatusSortsByID(t *testing.T) {
	got := securitygroup.Status([]ec2types.SecurityGroup{
		fake.NewSecurityGroup("sg-b", "b", nil), fake.NewSecurityGroup("sg-a", "a", nil),
	})
	want := []awsv1.SecurityGroup{{ID: "sg-a", Name: "a"}, {ID: "sg-b", Name: "b"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got)\n%s", diff)
	}
}

// epoch is the fake clocks' start.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestResolveNamesTheTermsThatMatchedNothing(t *testing.T) {
	p := securitygroup.NewProvider(network(), clocktesting.NewFakeClock(epoch))
	got, err := p.Resolve(t.Context(), nodeClass(
		awsv1.SecurityGroupSelectorTerm{ID: "sg-1"},
		awsv1.SecurityGroupSelectorTerm{ID: "sg-typo"},
		awsv1.SecurityGroupSelectorTerm{Name: "nodes"},
		awsv1.SecurityGroupSelectorTerm{Name: "absent"},
		awsv1.SecurityGroupSelectorTerm{Name: "eks-*"},
		awsv1.SecurityGroupSelectorTerm{Tags: map[string]string{"karpenter.sh/discovery": "dev"}},
	))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{1, 3, 5}, got.Unmatched); diff != "" {
		t.Errorf("unmatched terms (-want,+got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sg-1", "sg-2"}, ids(got.Selected)); diff != "" {
		t.Errorf("groups (-want,+got)\n%s", diff)
	}
}
