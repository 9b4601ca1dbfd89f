package instanceprofile_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

func nodeClass(name, uid, role string) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("uid-" + uid)}, Spec: awsv1.EC2NodeClassSpec{Role: role}}
}

func TestNameIsStablePerRegionAndNodeClass(t *testing.T) {
	a := instanceprofile.Name("prod", "us-west-2", "default")
	if again := instanceprofile.Name("prod", "us-west-2", "default"); again != a {
		t.Errorf("Name is not deterministic: %q then %q", a, again)
	}
	if !strings.HasPrefix(a, "prod_") || len(a) > 128 {
		t.Errorf("Name %q, want prod_<decimal hash> within IAM's 128 characters", a)
	}
	for _, other := range []string{instanceprofile.Name("prod", "us-east-1", "default"), instanceprofile.Name("prod", "us-west-2", "gpu")} {
		if other == a {
			t.Errorf("Name %q collides across regions or NodeClasses", a)
		}
	}
}

// Delete removes the profiles under the NodeClass's path and its managed
// name when karp made it, roles first; a user's profile is left alone.
func TestDeleteRemovesOnlyKarpsProfiles(t *testing.T) {
	iam := fake.NewIAM()
	iam.AddRole("node")
	clk := clocktesting.NewFakeClock(time.Now())
	p := instanceprofile.NewProvider(iam, clk, "prod", "us-west-2")
	nc := nodeClass("default", "1", "node")
	name, err := p.Ensure(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	iam.AddInstanceProfile("users-own", "node")

	if err := p.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}

	if diff := cmp.Diff([]string{"users-own"}, iam.InstanceProfileNames()); diff != "" {
		t.Errorf("profiles left (-want,+got)\n%s\n(deleted %s)", diff, name)
	}
	// Deleting again finds nothing and succeeds.
	if err := p.Delete(t.Context(), nc); err != nil {
		t.Errorf("second Delete: %v", err)
	}
}

// A user's profile that happens to carry the managed name (outside
// /karpenter/) is not deleted with the NodeClass.
func TestDeleteLeavesAUsersProfileOfTheManagedName(t *testing.T) {
	iam := fake.NewIAM()
	clk := clocktesting.NewFakeClock(time.Now())
	p := instanceprofile.NewProvider(iam, clk, "prod", "us-west-2")
	nc := nodeClass("default", "1", "node")
	iam.AddInstanceProfile(instanceprofile.Name("prod", "us-west-2", "default"), "node")

	if err := p.Delete(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	if got := iam.InstanceProfileNames(); len(got) != 1 {
		t.Errorf("profiles %v, want the user's kept", got)
	}
}

// A failing IAM call is returned, naming the profile; the next call
// succeeds.
func TestDeleteFailureIsReturned(t *testing.T) {
	iam := fake.NewIAM()
	iam.AddRole("node")
	clk := clocktesting.NewFakeClock(time.Now())
	p := instanceprofile.NewProvider(iam, clk, "prod", "us-west-2")
	nc := nodeClass("default", "1", "node")
	name, err := p.Ensure(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	iam.FailNext("DeleteInstanceProfile", 1, fake.Throttling("DeleteInstanceProfile"))

	err = p.Delete(t.Context(), nc)
	if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "RequestLimitExceeded") {
		t.Errorf("Delete error %v, want the throttling naming %s", err, name)
	}
	if err := p.Delete(t.Context(), nc); err != nil {
		t.Errorf("retried Delete: %v", err)
	}
	if got := iam.InstanceProfileNames(); len(got) != 0 {
		t.Errorf("profiles %v after the retried Delete, want none", got)
	}
}

func TestEnsureReportsAMissingRole(t *testing.T) {
	iam := fake.NewIAM()
	clk := clocktesting.NewFakeClock(time.Now())
	p := instanceprofile.NewProvider(iam, clk, "prod", "us-west-2")

	_, err := p.Ensure(t.Context(), nodeClass("default", "1", "ghost"))

	if !errors.Is(err, instanceprofile.ErrRoleNotFound) || !strings.Contains(err.Error(), `"ghost"`) {
		t.Errorf("Ensure error %v, want ErrRoleNotFound naming the role", err)
	}
}
