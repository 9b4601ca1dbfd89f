package garbagecollection_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/instanceprofile/garbagecollection"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

const (
	clusterName = "test-cluster"
	region      = "us-west-2"
	clusterPath = "/karpenter/us-west-2/test-cluster/"
)

func nodeClass(name, role string, profile *string) *awsv1.EC2NodeClass {
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       role,
			InstanceProfile:            profile,
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
		},
	}
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := h.Env.Client.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		for _, o := range objs {
			_ = h.Env.Client.Delete(context.WithoutCancel(t.Context()), o)
		}
	})
}

// Only the cluster's unused profiles past the protection window go, even
// when IAM ignores the listing's PathPrefix: a user's profile, another
// cluster's, and one under the cluster's path without karp's name and
// tags stay.
func TestUnusedProfilesAreDeleted(t *testing.T) {
	backend := fake.NewIAM()
	backend.SetClock(h.Clock)
	backend.AddRole("node")
	backend.IgnorePathPrefix = true
	provider := instanceprofile.NewProvider(backend, h.Clock, clusterName, region)
	// karps names a profile as karp does, <cluster>_<suffix>.
	karps := func(suffix string) string { return clusterName + "_" + suffix }
	// profile creates a profile with a role; owned ones carry the tags
	// karp gives its profiles.
	profile := func(name, path string, owned bool) {
		t.Helper()
		in := &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name), Path: aws.String(path)}
		if owned {
			in.Tags = []iamtypes.Tag{
				{Key: aws.String("kubernetes.io/cluster/" + clusterName), Value: aws.String("owned")},
				{Key: aws.String(instanceprofile.TagManagedBy), Value: aws.String(clusterName)},
			}
		}
		if _, err := backend.CreateInstanceProfile(t.Context(), in); err != nil {
			t.Fatal(err)
		}
		if _, err := backend.AddRoleToInstanceProfile(t.Context(), &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String("node")}); err != nil {
			t.Fatal(err)
		}
	}
	// By status: a class switched to a named profile that is karp's.
	switched := nodeClass("gc-switched", "", aws.String(karps("in-status")))
	// By managed name: a class with a role whose status is not written yet.
	withRole := nodeClass("gc-role", "node", nil)
	create(t, switched, withRole)
	switched.Status.InstanceProfile = karps("in-status")
	if err := h.Env.Client.Status().Update(t.Context(), switched); err != nil {
		t.Fatal(err)
	}
	claim := test.MakeNodeClaim("gc-claim").NodePool("default").
		Annotations(map[string]string{awsv1.AnnotationInstanceProfile: karps("on-a-nodeclaim")}).Obj()
	create(t, claim)
	profile(karps("in-status"), clusterPath+"uid-1/", true)
	profile(provider.ManagedName(withRole.Name), clusterPath+"uid-2/", true)
	profile(karps("on-a-nodeclaim"), clusterPath+"uid-3/", true)
	profile(karps("unused"), clusterPath+"uid-4/", true)
	profile("users-own", "/", false)
	profile(karps("users-own-tagged"), "/", true)
	profile("other-cluster_1", "/karpenter/us-west-2/other-cluster/uid-5/", true)
	profile("untagged-at-cluster-path", clusterPath+"uid-7/", false)
	profile(karps("untagged"), clusterPath+"uid-8/", false)
	h.Clock.Step(2 * time.Hour)
	profile(karps("unused-but-new"), clusterPath+"uid-6/", true)
	c := garbagecollection.NewController(h.APIReader, provider, h.Clock)

	res, err := c.Reconcile(t.Context(), reconcile.Request{})
	if err != nil {
		t.Fatal(err)
	}

	want := []string{karps("in-status"), provider.ManagedName(withRole.Name), karps("on-a-nodeclaim"), "other-cluster_1", karps("unused-but-new"),
		"users-own", karps("users-own-tagged"), "untagged-at-cluster-path", karps("untagged")}
	if diff := cmp.Diff(want, backend.InstanceProfileNames(), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("profiles left (-want,+got)\n%s", diff)
	}
	if res.RequeueAfter != 30*time.Minute {
		t.Errorf("next pass after %v, want 30m", res.RequeueAfter)
	}

	// A failing IAM call is returned; the next pass completes.
	h.Clock.Step(2 * time.Hour)
	backend.FailNext("DeleteInstanceProfile", 1, fake.Throttling("DeleteInstanceProfile"))
	if _, err := c.Reconcile(t.Context(), reconcile.Request{}); err == nil {
		t.Error("no error with DeleteInstanceProfile throttled")
	}
	if _, err := c.Reconcile(t.Context(), reconcile.Request{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := backend.InstanceProfile(karps("unused-but-new")); ok {
		t.Error("the profile past its protection window is left after the retry")
	}
}
