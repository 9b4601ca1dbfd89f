package awssim

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
)

const al2023x86 = "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id"

// TestNewSeedsTheGettingStartedAccount checks the account is discoverable
// as the getting-started manifests expect.
func TestNewSeedsTheGettingStartedAccount(t *testing.T) {
	ctx := t.Context()
	s := newTestSim(t)
	discovery := []ec2types.Filter{{Name: aws.String("tag:" + DiscoveryTagKey), Values: []string{DefaultClusterName}}}
	subnets, err := s.EC2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: discovery})
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]bool{}
	for _, sn := range subnets.Subnets {
		zones[aws.ToString(sn.AvailabilityZone)] = true
	}
	if len(subnets.Subnets) != 3 || len(zones) != 3 {
		t.Errorf("%d discovery-tagged subnets in zones %v, want one in each of 3 zones", len(subnets.Subnets), zones)
	}
	groups, err := s.EC2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: discovery})
	if err != nil || len(groups.SecurityGroups) != 1 {
		t.Errorf("discovery-tagged security groups: %v, %v", groups, err)
	}
	param, err := s.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(al2023x86)})
	if err != nil {
		t.Fatalf("the al2023 AMI parameter for 1.33: %v", err)
	}
	images, err := s.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{aws.ToString(param.Parameter.Value)}})
	if err != nil || len(images.Images) != 1 {
		t.Errorf("the parameter's image %s: %v, %v", aws.ToString(param.Parameter.Value), images, err)
	}
	profiles, err := s.IAM.ListInstanceProfilesForRole(ctx, &iam.ListInstanceProfilesForRoleInput{RoleName: aws.String(s.RoleName())})
	if err != nil || len(profiles.InstanceProfiles) != 1 {
		t.Errorf("instance profiles of %s: %v, %v", s.RoleName(), profiles, err)
	}
	types, err := s.EC2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"p3.8xlarge", "m5.large"}})
	if err != nil || len(types.InstanceTypes) != 2 {
		t.Errorf("catalog types: %v, %v", types, err)
	}
	if _, err := New(t.Context(), Options{}); err == nil {
		t.Error("New without a Kubernetes version succeeded")
	}
}

// TestPublishAMIMovesTheAlias checks a release points the alias's SSM
// parameter at a new, newer image.
func TestPublishAMIMovesTheAlias(t *testing.T) {
	ctx := t.Context()
	s := newTestSim(t)
	before, err := s.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(al2023x86)})
	if err != nil {
		t.Fatal(err)
	}
	released := s.PublishAMI("al2023@latest")
	after, err := s.SSM.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(al2023x86)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(after.Parameter.Value) == aws.ToString(before.Parameter.Value) || released[al2023x86] != aws.ToString(after.Parameter.Value) {
		t.Errorf("parameter %s -> %s, release says %s", aws.ToString(before.Parameter.Value), aws.ToString(after.Parameter.Value), released[al2023x86])
	}
	images, err := s.EC2.DescribeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{aws.ToString(before.Parameter.Value), aws.ToString(after.Parameter.Value)}})
	if err != nil || len(images.Images) != 2 {
		t.Fatalf("images: %v, %v", images, err)
	}
	created := map[string]string{}
	for _, img := range images.Images {
		created[aws.ToString(img.ImageId)] = aws.ToString(img.CreationDate)
	}
	if created[aws.ToString(after.Parameter.Value)] <= created[aws.ToString(before.Parameter.Value)] {
		t.Errorf("the release is not newer: %v", created)
	}
}

// TestCreateLeakedInstanceLooksLikeKarps checks the leaked instance
// carries the tags karp lists its instances by, and no NodeClaim tag.
func TestCreateLeakedInstanceLooksLikeKarps(t *testing.T) {
	ctx := t.Context()
	s := newTestSim(t)
	id, err := s.CreateLeakedInstance(ctx, "m5.large", "default", "default")
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{awsv1.TagNodePool}},
		{Name: aws.String("tag-key"), Values: []string{awsv1.TagNodeClass}},
		{Name: aws.String("tag:" + awsv1.TagEKSClusterName), Values: []string{DefaultClusterName}},
		{Name: aws.String("instance-state-name"), Values: []string{"running"}},
	}})
	if err != nil || len(out.Reservations) != 1 || aws.ToString(out.Reservations[0].Instances[0].InstanceId) != id {
		t.Fatalf("karp's listing finds %v (%v), want %s", out, err, id)
	}
	for _, tag := range out.Reservations[0].Instances[0].Tags {
		if aws.ToString(tag.Key) == awsv1.TagNodeClaim {
			t.Errorf("the leaked instance has a NodeClaim tag %s", aws.ToString(tag.Value))
		}
	}
}
