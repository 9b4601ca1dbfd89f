package termination_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass/termination"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/launchtemplate"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

const (
	clusterName = "test-cluster"
	region      = "us-west-2"
	nodeRole    = "KarpenterNodeRole-test"
)

// world is an AWS account through the fakes and the controller over it.
type world struct {
	ec2        *fake.EC2
	iam        *fake.IAM
	profiles   *instanceprofile.Provider
	controller *termination.Controller
}

func newWorld() *world {
	w := &world{ec2: fake.NewEC2(), iam: fake.NewIAM()}
	w.iam.AddRole(nodeRole)
	w.profiles = instanceprofile.NewProvider(w.iam, h.Clock, clusterName, region)
	templates := launchtemplate.NewProvider(w.ec2, h.Clock, launchtemplate.Options{ClusterName: clusterName})
	w.controller = termination.NewController(h.Client, h.Recorder, templates, w.profiles)
	return w
}

var seq atomic.Int64

func nodeClass(role string) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("term-%d", seq.Add(1))},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:                       role,
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "test"}}},
		},
	}
	if role == "" {
		nc.Spec.InstanceProfile = aws.String("users-profile")
	}
	return nc
}

// launchTemplate makes a launch template as karp's launches tag them.
func (w *world) launchTemplate(t *testing.T, name, nodeClassName string) {
	t.Helper()
	_, err := w.ec2.CreateLaunchTemplate(t.Context(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-0123")},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: fake.Tags(map[string]string{
			awsv1.TagEKSClusterName:          clusterName,
			awsv1.ClusterTagKey(clusterName): "owned",
			awsv1.TagNodeClass:               nodeClassName,
			awsv1.TagNodePool:                "default",
		})}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (w *world) launchTemplates(t *testing.T) []string {
	t.Helper()
	out, err := w.ec2.DescribeLaunchTemplates(t.Context(), &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, lt := range out.LaunchTemplates {
		names = append(names, aws.ToString(lt.LaunchTemplateName))
	}
	slices.Sort(names)
	return names
}

func (w *world) reconcile(t *testing.T, name string) (reconcile.Result, error) {
	t.Helper()
	h.Synced(t)
	return reconcile.AsReconciler(h.Env.Client, w.controller).Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
}

func (w *world) mustReconcile(t *testing.T, name string) reconcile.Result {
	t.Helper()
	res, err := w.reconcile(t, name)
	if err != nil {
		t.Fatalf("reconciling %s: %v", name, err)
	}
	return res
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := h.Env.Client.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context())
		for _, o := range objs {
			_ = h.Env.Client.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
			_ = h.Env.Client.Delete(ctx, o)
		}
	})
}

func get(t *testing.T, nc *awsv1.EC2NodeClass) (*awsv1.EC2NodeClass, bool) {
	t.Helper()
	got := &awsv1.EC2NodeClass{}
	err := h.Env.Client.Get(t.Context(), client.ObjectKeyFromObject(nc), got)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return got, err == nil
}

func deleteObj(t *testing.T, o client.Object) {
	t.Helper()
	if err := h.Env.Client.Delete(t.Context(), o); err != nil {
		t.Fatalf("deleting %s: %v", o.GetName(), err)
	}
}

func nodeClaim(name, nodeClassName string) *karpv1.NodeClaim {
	return test.MakeNodeClaim(name).NodePool("default").
		NodeClassRef(&karpv1.NodeClassReference{Group: awsv1.Group, Kind: awsv1.Kind, Name: nodeClassName}).Obj()
}

// A NodeClass deleted while a NodeClaim uses it is held by the finalizer,
// with an event naming the NodeClaim; once the NodeClaim is gone its
// launch templates and instance profile are deleted and so is it.
func TestDeletionWaitsForNodeClaimsThenCleansUp(t *testing.T) {
	w := newWorld()
	nc := nodeClass(nodeRole)
	other := nodeClass(nodeRole)
	create(t, nc, other)
	w.mustReconcile(t, nc.Name)
	got, _ := get(t, nc)
	if !controllerutil.ContainsFinalizer(got, awsv1.TerminationFinalizer) {
		t.Fatalf("finalizers %v, want %s added", got.Finalizers, awsv1.TerminationFinalizer)
	}
	profile, err := w.profiles.Ensure(t.Context(), got)
	if err != nil {
		t.Fatal(err)
	}
	otherProfile, err := w.profiles.Ensure(t.Context(), other)
	if err != nil {
		t.Fatal(err)
	}
	w.launchTemplate(t, "karpenter.k8s.aws/1", nc.Name)
	w.launchTemplate(t, "karpenter.k8s.aws/2", nc.Name)
	w.launchTemplate(t, "karpenter.k8s.aws/3", other.Name)
	claim := nodeClaim(nc.Name+"-a", nc.Name)
	create(t, claim)

	deleteObj(t, got)
	res := w.mustReconcile(t, nc.Name)

	if _, ok := get(t, nc); !ok {
		t.Fatal("the NodeClass was deleted while a NodeClaim still references it")
	}
	if res.RequeueAfter == 0 || res.RequeueAfter > 10*time.Minute {
		t.Errorf("requeue after %v, want within 10m while waiting", res.RequeueAfter)
	}
	if note := h.EventNote(t, awsv1.Kind, nc.Name, termination.ReasonWaitingOnNodeClaimTermination); !strings.Contains(note, claim.Name) {
		t.Errorf("event note %q, want it to name %s", note, claim.Name)
	}
	if lts := w.launchTemplates(t); len(lts) != 3 {
		t.Errorf("launch templates %v deleted while waiting", lts)
	}
	if _, ok := w.iam.InstanceProfile(profile); !ok {
		t.Error("instance profile deleted while waiting")
	}

	deleteObj(t, claim)
	w.mustReconcile(t, nc.Name)

	if _, ok := get(t, nc); ok {
		t.Error("the NodeClass still exists after its NodeClaims went")
	}
	if lts := w.launchTemplates(t); !slices.Equal(lts, []string{"karpenter.k8s.aws/3"}) {
		t.Errorf("launch templates %v, want only the other NodeClass's", lts)
	}
	if _, ok := w.iam.InstanceProfile(profile); ok {
		t.Errorf("instance profile %s left behind", profile)
	}
	if _, ok := w.iam.InstanceProfile(otherProfile); !ok {
		t.Errorf("the other NodeClass's instance profile %s was deleted", otherProfile)
	}
}

// A failing AWS call keeps the finalizer (nothing is leaked); the retry
// completes the cleanup.
func TestACleanupFailureKeepsTheFinalizer(t *testing.T) {
	for api, fail := range map[string]func(*world){
		"DeleteLaunchTemplate":  func(w *world) { w.ec2.FailNext("DeleteLaunchTemplate", 1, fake.Throttling("DeleteLaunchTemplate")) },
		"DeleteInstanceProfile": func(w *world) { w.iam.FailNext("DeleteInstanceProfile", 1, fake.Throttling("DeleteInstanceProfile")) },
		"ListInstanceProfiles": func(w *world) {
			w.iam.FailNext("ListInstanceProfiles", 1, fake.APIError("ServiceFailure", "IAM is unavailable"))
		},
	} {
		t.Run(api, func(t *testing.T) {
			w := newWorld()
			nc := nodeClass(nodeRole)
			create(t, nc)
			w.mustReconcile(t, nc.Name)
			got, _ := get(t, nc)
			profile, err := w.profiles.Ensure(t.Context(), got)
			if err != nil {
				t.Fatal(err)
			}
			w.launchTemplate(t, "karpenter.k8s.aws/"+nc.Name, nc.Name)
			fail(w)

			deleteObj(t, got)
			_, err = w.reconcile(t, nc.Name)

			if err == nil {
				t.Errorf("reconcile returned no error with %s failing", api)
			}
			if got, ok := get(t, nc); !ok || !controllerutil.ContainsFinalizer(got, awsv1.TerminationFinalizer) {
				t.Fatalf("NodeClass gone or finalizer released with %s failing", api)
			}

			w.mustReconcile(t, nc.Name)
			if _, ok := get(t, nc); ok {
				t.Error("the NodeClass still exists after the retry")
			}
			if _, ok := w.iam.InstanceProfile(profile); ok {
				t.Errorf("instance profile %s left behind", profile)
			}
			if lts := w.launchTemplates(t); len(lts) != 0 {
				t.Errorf("launch templates %v left behind", lts)
			}
		})
	}
}

// With spec.instanceProfile the profile is the user's: deleting the
// NodeClass leaves it.
func TestANamedProfileIsNotDeleted(t *testing.T) {
	w := newWorld()
	w.iam.AddInstanceProfile("users-profile", nodeRole)
	nc := nodeClass("")
	create(t, nc)
	w.mustReconcile(t, nc.Name)
	got, _ := get(t, nc)

	deleteObj(t, got)
	w.mustReconcile(t, nc.Name)

	if _, ok := get(t, nc); ok {
		t.Error("the NodeClass still exists")
	}
	if _, ok := w.iam.InstanceProfile("users-profile"); !ok {
		t.Error("the user's instance profile was deleted")
	}
	if n := w.iam.Calls("DeleteInstanceProfile"); n != 0 {
		t.Errorf("%d DeleteInstanceProfile calls, want 0", n)
	}
}

// The event names at most five NodeClaims and counts the rest.
func TestTheWaitEventNamesFiveNodeClaims(t *testing.T) {
	w := newWorld()
	nc := nodeClass(nodeRole)
	create(t, nc)
	w.mustReconcile(t, nc.Name)
	for i := range 7 {
		create(t, nodeClaim(fmt.Sprintf("%s-%d", nc.Name, i), nc.Name))
	}
	got, _ := get(t, nc)

	deleteObj(t, got)
	w.mustReconcile(t, nc.Name)

	note := h.EventNote(t, awsv1.Kind, nc.Name, termination.ReasonWaitingOnNodeClaimTermination)
	want := fmt.Sprintf("Waiting on NodeClaim termination for %[1]s-0, %[1]s-1, %[1]s-2, %[1]s-3, %[1]s-4 and 2 other(s)", nc.Name)
	if note != want {
		t.Errorf("event note %q, want %q", note, want)
	}
}
