package instanceprofile_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// unfiltered is an IAM fake whose ListInstanceProfiles ignores PathPrefix,
// holding a user's profile with a role, and a provider over it.
func unfiltered(t *testing.T) (*fake.IAM, *instanceprofile.Provider) {
	t.Helper()
	backend := fake.NewIAM()
	backend.IgnorePathPrefix = true
	backend.AddRole("node")
	backend.AddInstanceProfile("users-own", "node")
	return backend, instanceprofile.NewProvider(backend, clocktesting.NewFakeClock(time.Now()), "prod", "us-west-2")
}

// squat creates a profile at path with karp's cluster tags but not karp's
// name, or karp's name pattern without its tags, as a user might.
func squat(t *testing.T, backend *fake.IAM, name, path string, tags map[string]string) {
	t.Helper()
	in := &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name), Path: aws.String(path)}
	for k, v := range tags {
		in.Tags = append(in.Tags, iamtypes.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	if _, err := backend.CreateInstanceProfile(t.Context(), in); err != nil {
		t.Fatal(err)
	}
}

// Deleting a NodeClass that never made a profile, with IAM ignoring the
// PathPrefix, deletes nothing; deleting one that did deletes its profile
// alone: not the user's, not another class's, and not profiles under its
// path that lack karp's name or tags.
func TestDeleteChecksEachListedProfile(t *testing.T) {
	backend, p := unfiltered(t)
	other := nodeClass("other", "2", "node")
	otherName, err := p.Ensure(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	mine := nodeClass("mine", "1", "node")
	mineName, err := p.Ensure(t.Context(), mine)
	if err != nil {
		t.Fatal(err)
	}
	squat(t, backend, "untagged-at-karps-path", p.Path(mine), nil)
	squat(t, backend, "prod_123", p.Path(mine), map[string]string{"team": "web"})
	squat(t, backend, "named-otherwise", p.Path(mine), p.Tags(mine))
	before := backend.InstanceProfileNames()

	if err := p.Delete(t.Context(), nodeClass("never-launched", "3", "node")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, backend.InstanceProfileNames()); diff != "" {
		t.Errorf("deleting a class that made no profile changed the account (-want,+got)\n%s", diff)
	}

	if err := p.Delete(t.Context(), mine); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range before {
		if name != mineName {
			want = append(want, name)
		}
	}
	if diff := cmp.Diff(want, backend.InstanceProfileNames()); diff != "" {
		t.Errorf("profiles left (-want,+got)\n%s", diff)
	}
	if profile, ok := backend.InstanceProfile("users-own"); !ok || len(profile.Roles) != 1 {
		t.Errorf("the user's profile lost its role: %+v", profile)
	}
	if profile, ok := backend.InstanceProfile(otherName); !ok || len(profile.Roles) != 1 {
		t.Errorf("the other class's profile lost its role: %+v", profile)
	}
}

// List keeps to the cluster's path whatever IAM returned, and Remove
// deletes only a profile karp owns.
func TestListAndRemoveKeepToTheClustersProfiles(t *testing.T) {
	backend, p := unfiltered(t)
	mine := nodeClass("mine", "1", "node")
	mineName, err := p.Ensure(t.Context(), mine)
	if err != nil {
		t.Fatal(err)
	}
	squat(t, backend, "prod_456", "/karpenter/us-west-2/other-cluster/uid-9/", p.Tags(mine))
	squat(t, backend, "untagged-at-karps-path", p.Path(mine), nil)

	listed, err := p.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, profile := range listed {
		got = append(got, aws.ToString(profile.InstanceProfileName))
	}
	if diff := cmp.Diff([]string{mineName, "untagged-at-karps-path"}, got); diff != "" {
		t.Errorf("List (-want,+got)\n%s", diff)
	}
	for _, name := range []string{"users-own", "prod_456", "untagged-at-karps-path"} {
		profile, _ := backend.InstanceProfile(name)
		if err := p.Remove(t.Context(), profile); err != nil {
			t.Errorf("Remove(%s): %v", name, err)
		}
		if _, ok := backend.InstanceProfile(name); !ok {
			t.Errorf("Remove deleted %s, which karp does not own", name)
		}
	}
	profile, _ := backend.InstanceProfile(mineName)
	if err := p.Remove(t.Context(), profile); err != nil {
		t.Fatal(err)
	}
	if _, ok := backend.InstanceProfile(mineName); ok {
		t.Errorf("Remove left karp's own %s", mineName)
	}
}
