package awsenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// NodeClass is the getting-started EC2NodeClass: al2023@latest in the
// account's discovery-tagged subnets and security groups, with its node
// role.
func (e *Env) NodeClass(name string) *awsv1.EC2NodeClass {
	discovery := map[string]string{awssim.DiscoveryTagKey: e.Sim.ClusterName()}
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
			Role:                       e.Sim.RoleName(),
		},
	}
}

// NodePool is a NodePool on the EC2NodeClass of the same name for amd64
// c, m and r types, consolidating only empty nodes and never on its own: a
// test sees only the replacements it causes.
func NodePool(name string) *test.NodePoolWrapper {
	return test.MakeNodePool(name).NodeClassRef(awsv1.NodeClassReference(name)).
		Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64").
		Requirement(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r").
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
		ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never))
}

// CreateNodeClass creates the EC2NodeClass and waits until it is Ready.
// Deleting it is the caller's: SetUp or DeleteOnCleanup.
func (e *Env) CreateNodeClass(t testing.TB, nodeClass *awsv1.EC2NodeClass) {
	t.Helper()
	framework.Create(t, e.Client, nodeClass)
	framework.Eventually(t, ScaleTimeout, func(ctx context.Context) (bool, string) {
		got := &awsv1.EC2NodeClass{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(nodeClass), got); err != nil {
			return false, err.Error()
		}
		return got.StatusConditions().IsTrue("Ready"), fmt.Sprintf("EC2NodeClass %s conditions %v", nodeClass.Name, got.Status.Conditions)
	})
}

// SetUp creates a test's EC2NodeClass (waiting until it is Ready), a
// namespace and the pool, all called by the class's name (pool is
// NodePool(name) as the test adjusts it), and deletes them when the test
// ends, while karp still runs (DeleteOnCleanup).
func (e *Env) SetUp(t testing.TB, nodeClass *awsv1.EC2NodeClass, pool *test.NodePoolWrapper) {
	t.Helper()
	name := nodeClass.Name
	e.DeleteOnCleanup(t, []string{name}, []string{name}, []string{name})
	e.CreateNodeClass(t, nodeClass)
	framework.Create(t, e.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	framework.Create(t, e.Client, pool.Obj())
}

// DeleteOnCleanup deletes, when t ends, the namespaces and NodePools and
// the pools' NodeClaims, waits until karp has terminated them, then
// deletes the EC2NodeClasses and waits until all are gone. It must be
// called after StartKarp (t's clean-ups run last first, so it runs while
// the controller still does).
func (e *Env) DeleteOnCleanup(t testing.TB, namespaces, pools, nodeClasses []string) {
	t.Cleanup(func() {
		ctx := context.Background()
		var objs []client.Object
		for _, ns := range namespaces {
			objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
		for _, p := range pools {
			objs = append(objs, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p}})
		}
		for _, o := range objs {
			_ = e.Client.Delete(ctx, o)
		}
		for _, p := range pools {
			_ = e.Client.DeleteAllOf(ctx, &karpv1.NodeClaim{}, client.MatchingLabels{karpv1.NodePoolLabelKey: p})
		}
		if !waitFor(CleanupTimeout, func() bool {
			for _, p := range pools {
				if len(framework.PoolNodeClaims(ctx, e.Client, p)) > 0 {
					return false
				}
			}
			return true
		}) {
			t.Errorf("clean-up: NodeClaims of %v left after %s", pools, CleanupTimeout)
		}
		for _, nc := range nodeClasses {
			obj := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: nc}}
			_ = e.Client.Delete(ctx, obj)
			objs = append(objs, obj)
		}
		if !waitFor(CleanupTimeout, func() bool {
			for _, o := range objs {
				if !apierrors.IsNotFound(e.Client.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))) {
					return false
				}
			}
			return true
		}) {
			t.Errorf("clean-up: objects of %v %v %v left after %s", namespaces, pools, nodeClasses, CleanupTimeout)
		}
	})
}

// waitFor polls cond every half second until it holds or timeout passes,
// and reports whether it held. Clean-ups use it: framework.Eventually
// fails the test, which a clean-up reports itself.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(500 * time.Millisecond)
	}
	return cond()
}
