package awssim

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// TestIAMInstanceProfileLifecycle drives the instance-profile calls karp
// makes through the real iam.Client against the stateful fake: what one call
// writes, the next reads back over the wire.
func TestIAMInstanceProfileLifecycle(t *testing.T) {
	backend := fake.NewIAM()
	backend.AddRole("KarpenterNodeRole-my-cluster")
	client := iamClient(serve(t, NewIAMHandler(backend)), noRetries())
	ctx := t.Context()
	name := aws.String("my-cluster_1234567890")

	created, err := client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
		InstanceProfileName: name,
		Path:                aws.String("/karpenter/us-west-2/my-cluster/abc/"),
		Tags: []iamtypes.Tag{
			{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")},
			{Key: aws.String("kubernetes.io/cluster/my-cluster"), Value: aws.String("owned")},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(created.InstanceProfile.Path); got != "/karpenter/us-west-2/my-cluster/abc/" {
		t.Errorf("created profile has path %q", got)
	}
	if _, err := client.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: name}); !errors.As(err, new(*iamtypes.EntityAlreadyExistsException)) {
		t.Errorf("creating it again: got %v, want EntityAlreadyExistsException", err)
	}
	if _, err := client.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("KarpenterNodeRole-my-cluster")}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: name,
		Tags: []iamtypes.Tag{{Key: aws.String("karpenter.sh/managed-by"), Value: aws.String("my-cluster")}}}); err != nil {
		t.Fatal(err)
	}

	got, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.InstanceProfile.Roles) != 1 || aws.ToString(got.InstanceProfile.Roles[0].RoleName) != "KarpenterNodeRole-my-cluster" {
		t.Errorf("got roles %v, want KarpenterNodeRole-my-cluster", got.InstanceProfile.Roles)
	}
	tags := map[string]string{}
	for _, tag := range got.InstanceProfile.Tags {
		tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	if tags["karpenter.sh/managed-by"] != "my-cluster" || tags["kubernetes.io/cluster/my-cluster"] != "owned" || len(tags) != 3 {
		t.Errorf("got tags %v, want the two created with the profile and the one added", tags)
	}
	forRole, err := client.ListInstanceProfilesForRole(ctx, &iam.ListInstanceProfilesForRoleInput{RoleName: aws.String("KarpenterNodeRole-my-cluster")})
	if err != nil {
		t.Fatal(err)
	}
	if len(forRole.InstanceProfiles) != 1 || aws.ToString(forRole.InstanceProfiles[0].InstanceProfileName) != *name {
		t.Errorf("got profiles for the role %v, want only %s", forRole.InstanceProfiles, *name)
	}

	if _, err := client.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name}); !errors.As(err, new(*iamtypes.DeleteConflictException)) {
		t.Errorf("deleting a profile with a role: got %v, want DeleteConflictException", err)
	}
	if _, err := client.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("KarpenterNodeRole-my-cluster")}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name}); !errors.As(err, new(*iamtypes.NoSuchEntityException)) {
		t.Errorf("after deletion: got %v, want NoSuchEntityException", err)
	}
	if names := backend.InstanceProfileNames(); len(names) != 0 {
		t.Errorf("the fake still holds profiles %v", names)
	}
}

// TestIAMListInstanceProfilesPaginates pages ListInstanceProfiles with the
// SDK paginator (Marker/IsTruncated on the wire): every profile arrives once.
func TestIAMListInstanceProfilesPaginates(t *testing.T) {
	backend := fake.NewIAM()
	backend.AddRole("role")
	want := map[string]bool{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		backend.AddInstanceProfile("profile-"+n, "role")
		want["profile-"+n] = true
	}
	client := iamClient(serve(t, NewIAMHandler(backend)), noRetries())
	pages := iam.NewListInstanceProfilesPaginator(client, &iam.ListInstanceProfilesInput{MaxItems: aws.Int32(3)})
	got, n := map[string]int{}, 0
	for pages.HasMorePages() {
		page, err := pages.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, p := range page.InstanceProfiles {
			got[aws.ToString(p.InstanceProfileName)]++
		}
	}
	if n != 3 {
		t.Errorf("got %d pages of at most 3, want 3", n)
	}
	for name := range want {
		if got[name] != 1 {
			t.Errorf("%s arrived %d times, want once", name, got[name])
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d profiles, want %d", len(got), len(want))
	}
}
