package selector_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/selector"
)

func TestTagFilters(t *testing.T) {
	for name, tc := range map[string]struct {
		tags map[string]string
		want []ec2types.Filter
	}{
		"none": {tags: nil, want: []ec2types.Filter{}},
		"a value is a tag:<key> filter": {
			tags: map[string]string{"karpenter.sh/discovery": "prod"},
			want: []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"prod"}}},
		},
		"a wildcard value only requires the key": {
			tags: map[string]string{"kubernetes.io/role/internal-elb": "*"},
			want: []ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{"kubernetes.io/role/internal-elb"}}},
		},
		"sorted by key": {
			tags: map[string]string{"b": "2", "a": "*", "c": "3"},
			want: []ec2types.Filter{
				{Name: aws.String("tag-key"), Values: []string{"a"}},
				{Name: aws.String("tag:b"), Values: []string{"2"}},
				{Name: aws.String("tag:c"), Values: []string{"3"}},
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := selector.TagFilters(tc.tags)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreUnexported(ec2types.Filter{})); diff != "" {
				t.Errorf("(-want,+got)\n%s", diff)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, value string
		want           bool
	}{
		{"subnet-1", "subnet-1", true},
		{"subnet-1", "subnet-12", false},
		{"eks-*", "eks-cluster-sg", true},
		{"*Private*", "my-Private-a", true},
		{"*Private*", "my-Public-a", false},
		{"sg-?", "sg-1", true},
		{"sg-?", "sg-12", false},
		{"*", "", true},
		{"a?c", "ac", false},
		{"*-a", "x-b-a", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
	} {
		if got := selector.Match(tc.pattern, tc.value); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.value, got, tc.want)
		}
	}
}
