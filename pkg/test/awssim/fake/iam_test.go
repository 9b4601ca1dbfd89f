package fake

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"
)

func code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

// IAM's rules: one role per profile, no deleting a profile with a role,
// names unique, and NoSuchEntity for what does not exist.
func TestIAMInstanceProfileRules(t *testing.T) {
	f := NewIAM()
	f.AddRole("a")
	f.AddRole("b")
	ctx := t.Context()
	name := aws.String("p")
	steps := []struct {
		what     string
		call     func() error
		wantCode string
	}{
		{"create", func() error {
			_, err := f.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: name, Path: aws.String("/karpenter/x/"),
				Tags: []iamtypes.Tag{{Key: aws.String("k"), Value: aws.String("v")}}})
			return err
		}, ""},
		{"create again", func() error {
			_, err := f.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: name})
			return err
		}, "EntityAlreadyExists"},
		{"bad path", func() error {
			_, err := f.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("q"), Path: aws.String("nope")})
			return err
		}, "ValidationError"},
		{"add a missing role", func() error {
			_, err := f.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("ghost")})
			return err
		}, "NoSuchEntity"},
		{"add a", func() error {
			_, err := f.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("a")})
			return err
		}, ""},
		{"add b beside a", func() error {
			_, err := f.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("b")})
			return err
		}, "LimitExceeded"},
		{"delete with a role", func() error {
			_, err := f.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name})
			return err
		}, "DeleteConflict"},
		{"remove b (not attached)", func() error {
			_, err := f.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("b")})
			return err
		}, "NoSuchEntity"},
		{"remove a", func() error {
			_, err := f.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: name, RoleName: aws.String("a")})
			return err
		}, ""},
		{"tag", func() error {
			_, err := f.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: name,
				Tags: []iamtypes.Tag{{Key: aws.String("k"), Value: aws.String("w")}, {Key: aws.String("n"), Value: aws.String("x")}}})
			return err
		}, ""},
		{"delete", func() error {
			_, err := f.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: name})
			return err
		}, ""},
		{"get the deleted", func() error {
			_, err := f.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: name})
			return err
		}, "NoSuchEntity"},
		{"get a missing role", func() error {
			_, err := f.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("ghost")})
			return err
		}, "NoSuchEntity"},
	}
	for _, s := range steps {
		err := s.call()
		if got := code(err); got != s.wantCode {
			t.Fatalf("%s: error %v (code %q), want code %q", s.what, err, got, s.wantCode)
		}
		if s.what == "tag" {
			if tags := f.ProfileTags("p"); tags["k"] != "w" || tags["n"] != "x" || len(tags) != 2 {
				t.Fatalf("tags after TagInstanceProfile %v, want k=w overwritten and n=x added", tags)
			}
		}
	}
}

// ListInstanceProfiles filters by path prefix and pages by MaxItems.
func TestIAMListInstanceProfilesByPath(t *testing.T) {
	f := NewIAM()
	ctx := t.Context()
	for _, p := range []struct{ name, path string }{{"a", "/karpenter/r/c/1/"}, {"b", "/karpenter/r/c/1/"}, {"c", "/karpenter/r/c/2/"}, {"d", "/"}} {
		if _, err := f.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(p.name), Path: aws.String(p.path)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	pages := iam.NewListInstanceProfilesPaginator(f, &iam.ListInstanceProfilesInput{PathPrefix: aws.String("/karpenter/r/c/1/"), MaxItems: aws.Int32(1)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.InstanceProfiles) > 1 {
			t.Errorf("page of %d, want at most 1", len(page.InstanceProfiles))
		}
		for _, p := range page.InstanceProfiles {
			got = append(got, aws.ToString(p.InstanceProfileName))
		}
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("profiles under /karpenter/r/c/1/: %v, want [a b]", got)
	}
}
