package tagging_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclaim/tagging"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

const clusterName = "test-cluster"

type world struct {
	ec2        *fake.EC2
	controller *tagging.Controller
}

func newWorld(t *testing.T) *world {
	t.Helper()
	e := fake.NewEC2()
	if _, err := e.CreateLaunchTemplate(t.Context(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("karpenter.k8s.aws/1"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-1")},
	}); err != nil {
		t.Fatal(err)
	}
	// The instance provider batches describes on real time.
	instances := instance.NewProvider(e, clock.RealClock{}, clusterName, nil)
	return &world{ec2: e, controller: tagging.NewController(h.Client, instances, e, clusterName, h.Clock)}
}

// launch starts an instance as karp's launches tag it, plus extra tags,
// and returns its providerID.
func (w *world) launch(t *testing.T, extra map[string]string) string {
	t.Helper()
	tags := map[string]string{
		awsv1.TagEKSClusterName: clusterName, awsv1.ClusterTagKey(clusterName): "owned",
		awsv1.TagNodePool: "default", awsv1.TagNodeClass: "default",
	}
	for k, v := range extra {
		tags[k] = v
	}
	out, err := w.ec2.CreateFleet(t.Context(), &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("karpenter.k8s.aws/1"), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", AvailabilityZone: aws.String("us-west-2a"), SubnetId: aws.String("subnet-a")}},
		}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: fake.Tags(tags)}},
	})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("launching: %v (%+v)", err, out)
	}
	return instance.ProviderID("us-west-2a", out.Instances[0].InstanceIds[0])
}

func (w *world) tags(t *testing.T, providerID string) map[string]string {
	t.Helper()
	id, err := instance.ParseProviderID(providerID)
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range w.ec2.Instances() {
		if aws.ToString(inst.InstanceId) == id {
			out := map[string]string{}
			for _, tag := range inst.Tags {
				out[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
			}
			return out
		}
	}
	t.Fatalf("no instance %s", id)
	return nil
}

var seq atomic.Int64

// registered creates a NodeClaim of an EC2NodeClass whose Node registered
// (nodeName set) on the instance.
func registered(t *testing.T, providerID, nodeName string) *karpv1.NodeClaim {
	t.Helper()
	nc := test.MakeNodeClaim(fmt.Sprintf("tag-%d", seq.Add(1))).NodePool("default").
		NodeClassRef(&karpv1.NodeClassReference{Group: awsv1.Group, Kind: awsv1.Kind, Name: "default"}).Obj()
	if err := h.Env.Client.Create(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Env.Client.Delete(context.WithoutCancel(t.Context()), nc) })
	nc.Status.ProviderID = providerID
	nc.Status.NodeName = nodeName
	if err := h.Env.Client.Status().Update(t.Context(), nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

func (w *world) reconcile(t *testing.T, name string) (reconcile.Result, *karpv1.NodeClaim, error) {
	t.Helper()
	res, err := reconcile.AsReconciler(h.Env.Client, w.controller).Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
	got := &karpv1.NodeClaim{}
	if gerr := h.Env.Client.Get(t.Context(), client.ObjectKey{Name: name}, got); gerr != nil {
		t.Fatal(gerr)
	}
	return res, got, err
}

func tagged(nc *karpv1.NodeClaim) bool {
	return nc.Annotations[awsv1.AnnotationInstanceTagged] == "true" && nc.Annotations[awsv1.AnnotationClusterNameTaggedCompatibility] == "true"
}

// The instance of a registered NodeClaim gets Name, karpenter.sh/nodeclaim
// and eks:eks-cluster-name; a Name from spec.tags is kept; the NodeClaim
// is marked and not tagged again.
func TestRegisteredNodeClaimsInstanceIsTaggedOnce(t *testing.T) {
	for name, tc := range map[string]struct {
		extra    map[string]string
		wantName func(node string) string
	}{
		"untagged":        {wantName: func(node string) string { return node }},
		"user's Name tag": {extra: map[string]string{"Name": "team-a-worker"}, wantName: func(string) string { return "team-a-worker" }},
	} {
		t.Run(name, func(t *testing.T) {
			h.Clock.Step(time.Minute) // a fresh CreateTags budget
			w := newWorld(t)
			providerID := w.launch(t, tc.extra)
			node := "ip-10-0-0-" + fmt.Sprint(seq.Add(1)) + ".us-west-2.compute.internal"
			nc := registered(t, providerID, node)

			_, got, err := w.reconcile(t, nc.Name)
			if err != nil {
				t.Fatal(err)
			}

			tags := w.tags(t, providerID)
			want := map[string]string{"Name": tc.wantName(node), awsv1.TagNodeClaim: nc.Name, awsv1.TagEKSClusterName: clusterName}
			for k, v := range want {
				if tags[k] != v {
					t.Errorf("tag %s = %q, want %q (tags %v)", k, tags[k], v, tags)
				}
			}
			if !tagged(got) {
				t.Errorf("annotations %v, want %s and %s true", got.Annotations, awsv1.AnnotationInstanceTagged, awsv1.AnnotationClusterNameTaggedCompatibility)
			}
			calls := w.ec2.Calls("CreateTags")
			h.Clock.Step(time.Minute)
			if _, _, err := w.reconcile(t, nc.Name); err != nil {
				t.Fatal(err)
			}
			if n := w.ec2.Calls("CreateTags"); n != calls {
				t.Errorf("%d more CreateTags calls for a tagged NodeClaim, want none", n-calls)
			}
		})
	}
}

// A NodeClaim whose Node has not registered is not tagged yet.
func TestUnregisteredNodeClaimIsNotTagged(t *testing.T) {
	w := newWorld(t)
	providerID := w.launch(t, nil)
	nc := registered(t, providerID, "")

	_, got, err := w.reconcile(t, nc.Name)

	if err != nil || tagged(got) || w.ec2.Calls("CreateTags") != 0 {
		t.Errorf("err %v, annotations %v, %d CreateTags calls; want nothing done", err, got.Annotations, w.ec2.Calls("CreateTags"))
	}
	if _, ok := w.tags(t, providerID)["Name"]; ok {
		t.Error("instance got a Name before its Node registered")
	}
}

// CreateTags is called at most once a second: a second NodeClaim waits
// for the next second.
func TestCreateTagsKeepsToOneASecond(t *testing.T) {
	h.Clock.Step(time.Minute)
	w := newWorld(t)
	first := registered(t, w.launch(t, nil), "node-first")
	secondID := w.launch(t, nil)
	second := registered(t, secondID, "node-second")

	if _, _, err := w.reconcile(t, first.Name); err != nil {
		t.Fatal(err)
	}
	res, got, err := w.reconcile(t, second.Name)
	if err != nil {
		t.Fatal(err)
	}
	if res.RequeueAfter == 0 || tagged(got) || w.ec2.Calls("CreateTags") != 1 {
		t.Fatalf("second NodeClaim within the second: requeue %v, tagged %v, %d CreateTags calls; want requeued, untagged, 1 call",
			res.RequeueAfter, tagged(got), w.ec2.Calls("CreateTags"))
	}

	h.Clock.Step(res.RequeueAfter)
	if _, got, err = w.reconcile(t, second.Name); err != nil {
		t.Fatal(err)
	}
	if !tagged(got) || w.tags(t, secondID)["Name"] != "node-second" {
		t.Errorf("after the second: tagged %v, Name %q; want tagged node-second", tagged(got), w.tags(t, secondID)["Name"])
	}
}

// A throttled CreateTags is returned (retried with backoff) and the
// NodeClaim is not marked; the retry tags it. An instance that is gone is
// left alone.
func TestFailuresAndGoneInstances(t *testing.T) {
	h.Clock.Step(time.Minute)
	w := newWorld(t)
	nc := registered(t, w.launch(t, nil), "node-throttled")
	w.ec2.FailNext("CreateTags", 1, fake.Throttling("CreateTags"))

	_, got, err := w.reconcile(t, nc.Name)
	if err == nil || tagged(got) {
		t.Errorf("throttled: err %v, tagged %v; want the error and no mark", err, tagged(got))
	}
	h.Clock.Step(time.Second)
	if _, got, err = w.reconcile(t, nc.Name); err != nil || !tagged(got) {
		t.Errorf("retry: err %v, tagged %v; want tagged", err, tagged(got))
	}

	goneID := w.launch(t, nil)
	gone := registered(t, goneID, "node-gone")
	id, _ := instance.ParseProviderID(goneID)
	w.ec2.SetTerminationDelay(0)
	if _, err := w.ec2.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	h.Clock.Step(time.Second)
	calls := w.ec2.Calls("CreateTags")
	_, got, err = w.reconcile(t, gone.Name)
	if err != nil || tagged(got) || w.ec2.Calls("CreateTags") != calls {
		t.Errorf("gone instance: err %v, tagged %v, %d CreateTags calls; want nothing done", err, tagged(got), w.ec2.Calls("CreateTags")-calls)
	}
	if diff := cmp.Diff("", w.tags(t, goneID)["Name"]); diff != "" {
		t.Errorf("gone instance tagged (-want,+got)\n%s", diff)
	}
}
