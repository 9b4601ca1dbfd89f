package aws_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/controllers/nodeclaim/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// TestTheCoreMarksAWSDrift runs the core's NodeClaim disruption-signals
// controller over the AWS provider: a launched NodeClaim stored in the API
// server gets Drifted=True with the provider's reason once its
// EC2NodeClass's resolved subnets move, and loses it when they come back.
func TestTheCoreMarksAWSDrift(t *testing.T) {
	ctx := t.Context()
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	pool := test.MakeNodePool("drift-" + string(uuid.NewUUID())[:8]).Obj()
	pool.Spec.Template.Spec.NodeClassRef = awsv1.NodeClassReference(nodeClass.Name)
	if err := env.Client.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.WithoutCancel(t.Context()), pool) })

	nc := newNodeClaim("core", nodeClass.Name)
	nc.Labels[karpv1.NodePoolLabelKey] = pool.Name
	launched := launch(t, w, nc)
	launched.Labels[karpv1.NodePoolLabelKey] = pool.Name
	status := launched.Status
	if err := env.Client.Create(ctx, launched); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.WithoutCancel(t.Context()), launched) })
	launched.Status = status
	launched.StatusConditions().SetTrue(karpv1.ConditionTypeLaunched)
	if err := env.Client.Status().Update(ctx, launched); err != nil {
		t.Fatal(err)
	}

	controller := disruption.NewController(env.Client, w.Provider, clock.RealClock{})
	drifted := func(t *testing.T) *metav1.Condition {
		t.Helper()
		if _, err := reconcile.AsReconciler(env.Client, controller).Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: launched.Name}}); err != nil {
			t.Fatal(err)
		}
		got := &karpv1.NodeClaim{}
		if err := env.Client.Get(ctx, types.NamespacedName{Name: launched.Name}, got); err != nil {
			t.Fatal(err)
		}
		return got.StatusConditions().Get(karpv1.ConditionTypeDrifted)
	}
	if c := drifted(t); c != nil {
		t.Fatalf("fresh NodeClaim has %+v, want no Drifted condition", c)
	}
	subnets := nodeClass.Status.Subnets
	reconciled(t, nodeClass.Name, moveSubnets)
	if c := drifted(t); c == nil || c.Status != metav1.ConditionTrue || c.Reason != string(aws.SubnetDrift) {
		t.Errorf("after the subnets moved: Drifted %+v, want True with reason %s", c, aws.SubnetDrift)
	}
	reconciled(t, nodeClass.Name, func(nc *awsv1.EC2NodeClass) { nc.Status.Subnets = subnets })
	if c := drifted(t); c != nil {
		t.Errorf("after the subnets came back: Drifted %+v, want none", c)
	}
}

// TestAnUnlistedInstanceTypeSkipsOnlyTheAMICheck: the core reports a type
// the EC2NodeClass no longer lists; the AWS checks after AMI still run.
func TestAnUnlistedInstanceTypeSkipsOnlyTheAMICheck(t *testing.T) {
	nodeClass := createNodeClass(t, newNodeClass(nil), true)
	w := newWorld(t)
	launched := launch(t, w, newNodeClaim("unlisted", nodeClass.Name))
	launched.Labels[corev1.LabelInstanceTypeStable] = "x9.unlisted"
	if got := isDrifted(t, w.Provider, launched); got != "" {
		t.Errorf("IsDrifted = %q, want not drifted", got)
	}
	reconciled(t, nodeClass.Name, moveSubnets)
	if got := isDrifted(t, w.Provider, launched); got != aws.SubnetDrift {
		t.Errorf("IsDrifted = %q, want %s", got, aws.SubnetDrift)
	}
}
