package launchtemplate_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

func createTemplate(t *testing.T, e *fake.EC2, name string, tags map[string]string) {
	t.Helper()
	in := &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-old")},
	}
	if len(tags) > 0 {
		spec := ec2types.TagSpecification{ResourceType: ec2types.ResourceTypeLaunchTemplate}
		for k, v := range tags {
			spec.Tags = append(spec.Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		in.TagSpecifications = []ec2types.TagSpecification{spec}
	}
	if _, err := e.CreateLaunchTemplate(t.Context(), in); err != nil {
		t.Fatal(err)
	}
}

// othersTemplates creates launch templates karp must never delete: a
// user's, another cluster's, one with karp's name but no tags, and one
// with the cluster's tags but not karp's name. It returns their names.
func othersTemplates(t *testing.T, e *fake.EC2) []string {
	t.Helper()
	others := map[string]map[string]string{
		"users-template":                nil,
		launchtemplate.NamePrefix + "2": {"eks:eks-cluster-name": "other-cluster", "karpenter.k8s.aws/ec2nodeclass": "default"},
		launchtemplate.NamePrefix + "3": nil,
		"not-karps-name":                {"eks:eks-cluster-name": "test-cluster", "karpenter.k8s.aws/ec2nodeclass": "default"},
	}
	var names []string
	for name, tags := range others {
		createTemplate(t, e, name, tags)
		names = append(names, name)
	}
	return names
}

func survive(t *testing.T, e *fake.EC2, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, ok := e.LaunchTemplateData(name); !ok {
			t.Errorf("launch template %s, not karp's, was deleted", name)
		}
	}
}

// With DescribeLaunchTemplates ignoring its filters (and names), the
// templates hydrated for garbage collection are only the cluster's own,
// and a launch after a restart still finds its template by name.
func TestGCDeletesOnlyTheClustersTemplatesWhateverDescribeReturns(t *testing.T) {
	ctx := t.Context()
	e := fake.NewEC2()
	e.IgnoreFilters = true
	clk := clocktesting.NewFakeClock(time.Now())
	others := othersTemplates(t, e)
	leftover := launchtemplate.NamePrefix + "1"
	createTemplate(t, e, leftover, map[string]string{"eks:eks-cluster-name": "test-cluster", "karpenter.k8s.aws/ec2nodeclass": "default"})
	req := request(nodeClass(nil), karpv1.CapacityTypeOnDemand, instanceType("m5.large", "amd64", 29))
	if _, err := launchtemplate.NewProvider(e, clk, opts).EnsureAll(ctx, req); err != nil {
		t.Fatal(err)
	}

	// A process that has not hydrated finds the template it launches with
	// among everything DescribeLaunchTemplates returns.
	if _, err := launchtemplate.NewProvider(e, clk, opts).EnsureAll(ctx, req); err != nil {
		t.Fatalf("EnsureAll of an existing template, unhydrated: %v", err)
	}
	// A restarted process hydrates, and collects what it has not used.
	p := launchtemplate.NewProvider(e, clk, opts)
	if err := p.Hydrate(ctx); err != nil {
		t.Fatal(err)
	}
	used, err := p.EnsureAll(ctx, req)
	if err != nil {
		t.Fatalf("EnsureAll after a restart: %v", err)
	}
	clk.Step(launchtemplate.TTL / 2)
	if _, err := p.EnsureAll(ctx, req); err != nil {
		t.Fatal(err)
	}
	clk.Step(launchtemplate.TTL / 2)
	if err := p.GC(ctx); err != nil {
		t.Fatal(err)
	}

	survive(t, e, others...)
	if _, ok := e.LaunchTemplateData(leftover); ok {
		t.Errorf("the cluster's unused template %s was kept", leftover)
	}
	if _, ok := e.LaunchTemplateData(used[0].Name); !ok {
		t.Errorf("the template in use %s was deleted", used[0].Name)
	}
}

// DeleteAll of a NodeClass deletes only the cluster's templates of that
// NodeClass, whatever DescribeLaunchTemplates returns.
func TestDeleteAllDeletesOnlyTheNodeClassesTemplates(t *testing.T) {
	ctx := t.Context()
	e := fake.NewEC2()
	e.IgnoreFilters = true
	others := othersTemplates(t, e)
	otherClass := launchtemplate.NamePrefix + "4"
	createTemplate(t, e, otherClass, map[string]string{"eks:eks-cluster-name": "test-cluster", "karpenter.k8s.aws/ec2nodeclass": "other"})
	mine := launchtemplate.NamePrefix + "5"
	createTemplate(t, e, mine, map[string]string{"eks:eks-cluster-name": "test-cluster", "karpenter.k8s.aws/ec2nodeclass": "default"})
	p := launchtemplate.NewProvider(e, clocktesting.NewFakeClock(time.Now()), opts)

	if err := p.DeleteAll(ctx, "default"); err != nil {
		t.Fatal(err)
	}

	survive(t, e, append(others, otherClass)...)
	if _, ok := e.LaunchTemplateData(mine); ok {
		t.Errorf("the NodeClass's template %s was kept", mine)
	}
}
