package nodeclass_test

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// roleNodeClass is nodeClass() naming the node role instead of a profile.
func roleNodeClass(role string) *awsv1.EC2NodeClass {
	nc := nodeClass()
	nc.Spec.InstanceProfile = nil
	nc.Spec.Role = role
	return nc
}

func roles(p iamtypes.InstanceProfile) []string {
	var out []string
	for _, r := range p.Roles {
		out = append(out, aws.ToString(r.RoleName))
	}
	return out
}

// spec.role: karp creates the NodeClass's profile with upstream's name,
// path and tags, attaches the role, records it in the status, and reuses it
// afterwards.
func TestRoleCreatesTheNodeClassProfile(t *testing.T) {
	w := newWorld(t)
	nc := roleNodeClass(role)
	nc.Spec.Tags = map[string]string{"team": "ml"}
	create(t, nc)

	_, got := w.mustReconcile(t, nc.Name)

	want := instanceprofile.Name(clusterName, region, nc.Name)
	if got.Status.InstanceProfile != want {
		t.Fatalf("status.instanceProfile %q, want %q", got.Status.InstanceProfile, want)
	}
	profile, ok := w.iam.InstanceProfile(want)
	if !ok {
		t.Fatalf("no instance profile %s in IAM (have %v)", want, w.iam.InstanceProfileNames())
	}
	if path := aws.ToString(profile.Path); path != "/karpenter/us-west-2/test-cluster/"+string(got.UID)+"/" {
		t.Errorf("profile path %q, want /karpenter/<region>/<cluster>/<NodeClass UID>/", path)
	}
	if diff := cmp.Diff([]string{role}, roles(profile)); diff != "" {
		t.Errorf("profile roles (-want,+got)\n%s", diff)
	}
	wantTags := map[string]string{
		"team":                               "ml",
		"kubernetes.io/cluster/test-cluster": "owned",
		"eks:eks-cluster-name":               clusterName,
		"karpenter.k8s.aws/ec2nodeclass":     nc.Name,
		"topology.kubernetes.io/region":      region,
		"karpenter.sh/managed-by":            clusterName,
	}
	if diff := cmp.Diff(wantTags, w.iam.ProfileTags(want)); diff != "" {
		t.Errorf("profile tags (-want,+got)\n%s", diff)
	}
	if c := condition(t, got, awsv1.ConditionTypeReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready %s (%s: %s), want True", c.Status, c.Reason, c.Message)
	}

	// Later reconciles, cached or not, reuse the profile.
	h.Clock.Step(16 * time.Minute)
	_, got = w.mustReconcile(t, nc.Name)
	if got.Status.InstanceProfile != want || w.iam.Calls("CreateInstanceProfile") != 1 || w.iam.Calls("AddRoleToInstanceProfile") != 1 {
		t.Errorf("after 16 minutes: status %q, %d CreateInstanceProfile and %d AddRoleToInstanceProfile calls; want %q, 1 and 1",
			got.Status.InstanceProfile, w.iam.Calls("CreateInstanceProfile"), w.iam.Calls("AddRoleToInstanceProfile"), want)
	}
}

// A role given with its IAM path is attached by name; a changed role
// replaces the one attached (a profile holds one role).
func TestRoleChangeReplacesTheAttachedRole(t *testing.T) {
	w := newWorld(t)
	w.iam.AddRole("NodeRoleB")
	nc := roleNodeClass("team/" + role)
	create(t, nc)
	_, got := w.mustReconcile(t, nc.Name)
	name := got.Status.InstanceProfile
	if profile, _ := w.iam.InstanceProfile(name); !slices.Equal(roles(profile), []string{role}) {
		t.Fatalf("profile %s roles %v, want [%s]", name, roles(profile), role)
	}

	got.Spec.Role = "NodeRoleB"
	if err := h.Env.Client.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	_, got = w.mustReconcile(t, nc.Name)

	profile, _ := w.iam.InstanceProfile(name)
	if got.Status.InstanceProfile != name || !slices.Equal(roles(profile), []string{"NodeRoleB"}) {
		t.Errorf("status %q with roles %v, want %q with [NodeRoleB]", got.Status.InstanceProfile, roles(profile), name)
	}
	if c := condition(t, got, awsv1.ConditionTypeInstanceProfileReady); c.Status != metav1.ConditionTrue {
		t.Errorf("InstanceProfileReady %s (%s: %s), want True", c.Status, c.Reason, c.Message)
	}
}

// A profile of the managed name made before (by Karpenter, or a replica)
// is reused: tagged where it lacks tags, given the role, not recreated.
func TestAnExistingProfileIsReused(t *testing.T) {
	w := newWorld(t)
	nc := roleNodeClass(role)
	name := instanceprofile.Name(clusterName, region, nc.Name)
	w.iam.AddInstanceProfile(name, "")
	create(t, nc)

	_, got := w.mustReconcile(t, nc.Name)

	profile, _ := w.iam.InstanceProfile(name)
	if got.Status.InstanceProfile != name || !slices.Equal(roles(profile), []string{role}) {
		t.Errorf("status %q with roles %v, want %q with [%s]", got.Status.InstanceProfile, roles(profile), name, role)
	}
	if n := w.iam.Calls("CreateInstanceProfile"); n != 0 {
		t.Errorf("%d CreateInstanceProfile calls, want 0", n)
	}
	if tags := w.iam.ProfileTags(name); tags["karpenter.k8s.aws/ec2nodeclass"] != nc.Name || tags["kubernetes.io/cluster/test-cluster"] != "owned" {
		t.Errorf("profile tags %v, want the NodeClass and cluster tags added", tags)
	}
}

// spec.instanceProfile: the profile is used as it is; nothing is created,
// tagged or attached.
func TestANamedProfileIsNotManaged(t *testing.T) {
	w := newWorld(t)
	nc := nodeClass()
	create(t, nc)
	before := w.iam.InstanceProfileNames()

	_, got := w.mustReconcile(t, nc.Name)

	if got.Status.InstanceProfile != profile {
		t.Errorf("status.instanceProfile %q, want %q", got.Status.InstanceProfile, profile)
	}
	for _, api := range []string{"CreateInstanceProfile", "TagInstanceProfile", "AddRoleToInstanceProfile", "RemoveRoleFromInstanceProfile", "DeleteInstanceProfile"} {
		if n := w.iam.Calls(api); n != 0 {
			t.Errorf("%d %s calls, want 0", n, api)
		}
	}
	if diff := cmp.Diff(before, w.iam.InstanceProfileNames()); diff != "" {
		t.Errorf("instance profiles changed (-before,+after)\n%s", diff)
	}
}

// A role IAM does not know is named in the condition, and is not tried
// again for a minute; once it exists the NodeClass becomes Ready.
func TestAMissingRoleIsRetriedAfterAMinute(t *testing.T) {
	w := newWorld(t)
	nc := roleNodeClass("LateRole")
	create(t, nc)

	_, got := w.mustReconcile(t, nc.Name)
	c := condition(t, got, awsv1.ConditionTypeInstanceProfileReady)
	if c.Status != metav1.ConditionFalse || c.Reason != awsv1.ConditionReasonInstanceProfileMissing || !contains(c.Message, `role "LateRole" (spec.role) does not exist in IAM`) {
		t.Errorf("InstanceProfileReady %s/%s %q, want False/%s naming the role", c.Status, c.Reason, c.Message, awsv1.ConditionReasonInstanceProfileMissing)
	}

	w.iam.AddRole("LateRole")
	calls := w.iam.Calls("AddRoleToInstanceProfile")
	w.mustReconcile(t, nc.Name)
	if n := w.iam.Calls("AddRoleToInstanceProfile"); n != calls {
		t.Errorf("%d AddRoleToInstanceProfile calls within the minute, want none", n-calls)
	}

	h.Clock.Step(time.Minute + time.Second)
	_, got = w.mustReconcile(t, nc.Name)
	if c := condition(t, got, awsv1.ConditionTypeReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready %s (%s: %s) after the role was created, want True", c.Status, c.Reason, c.Message)
	}
}

// IAM throttled or refusing: the NodeClass is not Ready, the condition and
// a Warning event say what failed, the reconcile is retried; nothing
// crashes and the profile is made once IAM answers.
func TestIAMFailuresLeaveTheNodeClassNotReady(t *testing.T) {
	for name, tc := range map[string]struct {
		err     error
		message []string
	}{
		"throttled": {err: fake.Throttling("CreateInstanceProfile"), message: []string{"creating instance profile", "RequestLimitExceeded"}},
		"access denied": {
			err:     fake.APIError("AccessDenied", "User: arn:aws:sts::123456789012:assumed-role/karp is not authorized to perform: iam:CreateInstanceProfile"),
			message: []string{"access denied", "iam:CreateInstanceProfile"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			w.iam.FailNext("CreateInstanceProfile", 1, tc.err)
			nc := roleNodeClass(role)
			create(t, nc)

			_, got, err := w.reconcile(t, nc.Name)

			if err == nil {
				t.Error("reconcile returned no error, want the IAM failure (retried with backoff)")
			}
			c := condition(t, got, awsv1.ConditionTypeInstanceProfileReady)
			if c.Status == metav1.ConditionTrue || c.Reason != "InstanceProfileCreationFailed" || !contains(c.Message, tc.message...) {
				t.Errorf("InstanceProfileReady %s/%s %q, want not True/InstanceProfileCreationFailed with %q", c.Status, c.Reason, c.Message, tc.message)
			}
			if ready := condition(t, got, awsv1.ConditionTypeReady); ready.Status == metav1.ConditionTrue {
				t.Errorf("Ready True during the IAM failure")
			}
			if note := h.EventNote(t, awsv1.Kind, nc.Name, "InstanceProfileCreationFailed"); !contains(note, tc.message...) {
				t.Errorf("event note %q, want %q", note, tc.message)
			}

			_, got = w.mustReconcile(t, nc.Name)
			if c := condition(t, got, awsv1.ConditionTypeReady); c.Status != metav1.ConditionTrue || got.Status.InstanceProfile == "" {
				t.Errorf("after IAM recovered: Ready %s (%s), status.instanceProfile %q; want True and set", c.Status, c.Message, got.Status.InstanceProfile)
			}
			if names := w.iam.InstanceProfileNames(); len(names) != 2 {
				t.Errorf("instance profiles %v, want the world's and the NodeClass's", names)
			}
		})
	}
}
