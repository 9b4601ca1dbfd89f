package garbagecollection_test

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
)

// setup is the AWS provider on the EC2 fake, launching on the test's fake
// clock, with an EC2NodeClass and the core garbage collector over it.
func setup(t *testing.T) (*awstest.World, *awsv1.EC2NodeClass, *garbagecollection.Controller) {
	t.Helper()
	h.Reset(t)
	w := awstest.NewWorld(t, h.Env)
	w.EC2.SetLaunchClock(h.Clock)
	nodeClass := awstest.CreateNodeClass(t, h.Env.Client, awstest.NewNodeClass(nil), true)
	return w, nodeClass, garbagecollection.NewController(h.Client, h.APIReader, w.Provider, h.Clock)
}

func collect(t *testing.T, c *garbagecollection.Controller) {
	t.Helper()
	h.Synced(t)
	if err := c.Collect(t.Context()); err != nil {
		t.Fatalf("collecting: %v", err)
	}
}

// runInstance launches an instance straight through EC2 (no NodeClaim
// ever names it) with tags, and returns its ID.
func runInstance(t *testing.T, w *awstest.World, tags map[string]string) string {
	t.Helper()
	if _, ok := w.EC2.LaunchTemplateData("direct"); !ok {
		if _, err := w.EC2.CreateLaunchTemplate(t.Context(), &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String("direct"),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-amd64")},
		}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := w.EC2.CreateFleet(t.Context(), &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
				LaunchTemplateName: aws.String("direct"), Version: aws.String("$Latest"),
			},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", AvailabilityZone: aws.String("us-west-2a"), SubnetId: aws.String("subnet-1")}},
		}},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tagList(tags)}},
	})
	if err != nil || len(out.Instances) != 1 {
		t.Fatalf("launching: %v (%+v)", err, out)
	}
	return out.Instances[0].InstanceIds[0]
}

func tagList(tags map[string]string) []ec2types.Tag {
	var out []ec2types.Tag
	for k, v := range tags {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	return out
}

// clusterTags are the tags karp launches with, for cluster.
func clusterTags(cluster, nodeClass string) map[string]string {
	return map[string]string{
		awsv1.TagEKSClusterName: cluster, awsv1.ClusterTagKey(cluster): "owned",
		awsv1.TagNodePool: "default", awsv1.TagNodeClass: nodeClass,
	}
}

// state is each instance's EC2 state by ID.
func state(w *awstest.World) map[string]string {
	out := map[string]string{}
	for _, inst := range w.EC2.Instances() {
		out[aws.ToString(inst.InstanceId)] = string(inst.State.Name)
	}
	return out
}

func node(t *testing.T, name, instanceID string) *corev1.Node {
	t.Helper()
	n := test.MakeNode(name).ProviderID(instance.ProviderID("us-west-2a", instanceID)).Obj()
	n.Finalizers = []string{karpv1.TerminationFinalizer}
	h.Create(t, n)
	return n
}

// An instance tagged for this cluster with no NodeClaim is terminated once
// older than the grace period, with its Node; a young one, another
// cluster's, one without karp's NodePool tag and one a NodeClaim owns are
// left alone.
func TestLeakedInstancesAreTerminatedOnceOldEnough(t *testing.T) {
	w, nodeClass, c := setup(t)
	leaked := runInstance(t, w, clusterTags(awstest.ClusterName, nodeClass.Name))
	leakedNode := node(t, "leaked-node", leaked)
	otherCluster := runInstance(t, w, clusterTags("other-cluster", nodeClass.Name))
	untagged := runInstance(t, w, map[string]string{awsv1.TagEKSClusterName: awstest.ClusterName, "Name": "bastion"})
	owner := awstest.NewNodeClaim("owned", nodeClass.Name)
	owner.Finalizers = []string{karpv1.TerminationFinalizer}
	h.Create(t, owner)
	launched, err := w.Provider.Create(t.Context(), owner)
	if err != nil {
		t.Fatal(err)
	}
	owned, _ := instance.ParseProviderID(launched.Status.ProviderID)
	owner.Status.ProviderID = launched.Status.ProviderID
	h.UpdateStatus(t, owner)

	// 1. Within the grace period nothing is touched.
	h.Clock.Step(garbagecollection.LeakedInstanceAge / 2)
	young := runInstance(t, w, clusterTags(awstest.ClusterName, nodeClass.Name))
	collect(t, c)
	for id, s := range state(w) {
		if s != string(ec2types.InstanceStateNameRunning) {
			t.Errorf("instance %s is %s within the grace period", id, s)
		}
	}

	// 2. Past it, only the leaked one goes.
	h.Clock.Step(garbagecollection.LeakedInstanceAge/2 + time.Second)
	collect(t, c)

	got := state(w)
	if s := got[leaked]; s != string(ec2types.InstanceStateNameShuttingDown) && s != string(ec2types.InstanceStateNameTerminated) {
		t.Errorf("leaked instance is %s, want terminated", s)
	}
	for name, id := range map[string]string{"young": young, "other cluster's": otherCluster, "untagged": untagged, "owned": owned} {
		if got[id] != string(ec2types.InstanceStateNameRunning) {
			t.Errorf("%s instance %s is %s, want running", name, id, got[id])
		}
	}
	if h.Get(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: leakedNode.Name}}) {
		t.Error("the leaked instance's Node survived")
	}
	if n := w.EC2.Calls("TerminateInstances"); n != 1 {
		t.Errorf("%d TerminateInstances calls, want 1", n)
	}
}

// A registered NodeClaim whose instance was terminated outside karp is
// deleted; one whose instance runs stays.
func TestNodeClaimsWhoseInstanceIsGoneAreDeleted(t *testing.T) {
	w, nodeClass, c := setup(t)
	w.EC2.SetTerminationDelay(0)
	var claims []*karpv1.NodeClaim
	var ids []string
	for _, name := range []string{"gone", "running"} {
		nc := awstest.NewNodeClaim(name, nodeClass.Name)
		nc.Finalizers = []string{karpv1.TerminationFinalizer}
		h.Create(t, nc)
		launched, err := w.Provider.Create(t.Context(), nc)
		if err != nil {
			t.Fatal(err)
		}
		nc.Status.ProviderID = launched.Status.ProviderID
		nc.StatusConditions().WithClock(h.Clock).SetTrue(karpv1.ConditionTypeLaunched)
		nc.StatusConditions().WithClock(h.Clock).SetTrue(karpv1.ConditionTypeRegistered)
		h.UpdateStatus(t, nc)
		id, _ := instance.ParseProviderID(launched.Status.ProviderID)
		claims, ids = append(claims, nc), append(ids, id)
	}
	if _, err := w.EC2.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: ids[:1]}); err != nil {
		t.Fatal(err)
	}
	h.Clock.Step(time.Minute)

	collect(t, c)

	var deleted []string
	for _, nc := range claims {
		got := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
		if !h.Get(t, got) || !got.DeletionTimestamp.IsZero() {
			deleted = append(deleted, nc.Name)
		}
	}
	if !slices.Equal(deleted, []string{claims[0].Name}) {
		t.Errorf("deleted NodeClaims %v, want only %s", deleted, claims[0].Name)
	}
	if s := state(w)[ids[1]]; s != string(ec2types.InstanceStateNameRunning) {
		t.Errorf("the running NodeClaim's instance is %s", s)
	}
}

// launch creates a NodeClaim and launches it through the provider,
// recording providerID (the launched one when empty) in its status.
func launch(t *testing.T, w *awstest.World, name, nodeClassName string) (*karpv1.NodeClaim, *karpv1.NodeClaim) {
	t.Helper()
	nc := awstest.NewNodeClaim(name, nodeClassName)
	nc.Finalizers = []string{karpv1.TerminationFinalizer}
	h.Create(t, nc)
	launched, err := w.Provider.Create(t.Context(), nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, launched
}

// NodeClaims launched from CreateFleet answers without the per-instance
// zone and subnet get the zone in their providerID and labels; NodeClaims
// whose providerID lacks the zone (recorded so by an older karp), or names
// the instance only through their Node, keep their instances past the
// grace period: instances are matched by ID.
func TestInstancesAreMatchedToNodeClaimsByID(t *testing.T) {
	w, nodeClass, c := setup(t)
	w.EC2.FleetOmitsInstancePlacement = true
	w.EC2.IgnoreFilters = true

	// 1. The zone comes from elsewhere in the answer.
	zoned, launched := launch(t, w, "zoned", nodeClass.Name)
	id, err := instance.ParseProviderID(launched.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	zone := launched.Labels[corev1.LabelTopologyZone]
	if zone == "" || launched.Status.ProviderID != instance.ProviderID(zone, id) {
		t.Errorf("launched NodeClaim has providerID %q and zone label %q, want aws:///<zone>/<id>", launched.Status.ProviderID, zone)
	}
	zoned.Status.ProviderID = launched.Status.ProviderID
	h.UpdateStatus(t, zoned)

	// 2. A providerID recorded without the zone.
	zoneless, launched := launch(t, w, "zoneless", nodeClass.Name)
	zonelessID, _ := instance.ParseProviderID(launched.Status.ProviderID)
	zoneless.Status.ProviderID = instance.ProviderID("", zonelessID)
	h.UpdateStatus(t, zoneless)

	// 3. A providerID the provider cannot read, the instance named by the
	// NodeClaim's Node.
	viaNode, launched := launch(t, w, "via-node", nodeClass.Name)
	viaNodeID, _ := instance.ParseProviderID(launched.Status.ProviderID)
	viaNode.Status.ProviderID = "aws:///garbled"
	viaNode.Status.NodeName = "via-node-node"
	h.UpdateStatus(t, viaNode)
	n := test.MakeNode("via-node-node").ProviderID(launched.Status.ProviderID).Obj()
	h.Create(t, n)

	leaked := runInstance(t, w, clusterTags(awstest.ClusterName, nodeClass.Name))
	h.Clock.Step(garbagecollection.LeakedInstanceAge + time.Second)
	collect(t, c)

	got := state(w)
	for name, id := range map[string]string{"zoned": id, "zoneless": zonelessID, "via-node": viaNodeID} {
		if got[id] != string(ec2types.InstanceStateNameRunning) {
			t.Errorf("the %s NodeClaim's instance %s is %s, want running", name, id, got[id])
		}
	}
	if s := got[leaked]; s != string(ec2types.InstanceStateNameShuttingDown) && s != string(ec2types.InstanceStateNameTerminated) {
		t.Errorf("the leaked instance is %s, want terminated", s)
	}
	if !h.Get(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}) {
		t.Error("the Node of a NodeClaim's instance was deleted")
	}
}
