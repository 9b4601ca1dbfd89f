package aws_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami/amitest"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/fake"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/securitygroup"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/subnet"
)

// clusterVersion is the cluster's Kubernetes version as the AMI provider
// reads it; the test moves it the way a control-plane upgrade does (karp
// asks the API server's /version).
type clusterVersion struct {
	mu      sync.Mutex
	version string
}

func (c *clusterVersion) Get(context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version, nil
}

func (c *clusterVersion) set(v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version = v
}

// amd64Standard is the SSM parameter of al2023's standard x86 AMI.
func amd64Standard(k8s string) string {
	return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/x86_64/standard/recommended/image_id", k8s)
}

// TestAMIDriftFromSSM follows a release from SSM to the drift verdict: a
// new value of an al2023@latest parameter, the AMI provider reading it
// once its cached value expires, the nodeclass controller writing
// status.amis, and IsDrifted saying AMIDrift; then the same for a cluster
// upgrade, which moves the alias to another SSM path.
func TestAMIDriftFromSSM(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(clock.RealClock{}.Now())
	w := newWorld(t)
	ssm, iam := fake.NewSSM(), fake.NewIAM()
	w.EC2.SetImageClock(clk)
	for _, z := range zones {
		w.EC2.AddSubnets(fake.NewSubnet("subnet-"+z.Name, z.Name, z.ID, 200, map[string]string{"karpenter.sh/discovery": clusterName}))
	}
	w.EC2.AddSecurityGroups(fake.NewSecurityGroup("sg-nodes", "nodes", map[string]string{"karpenter.sh/discovery": clusterName}))
	nc := newNodeClass(nil)
	iam.AddInstanceProfile("KarpenterNodeInstanceProfile-test", nc.Spec.Role)
	versions := &clusterVersion{version: "1.31"}
	first := amitest.Publish(w.EC2, ssm, "al2023@latest", "1.31", clk.Now().Add(-48*time.Hour))
	amis := ami.NewProvider(w.EC2, ssm, versions, clk, ami.DefaultRefreshInterval)
	controller := nodeclass.NewController(env.Client, nil, clk, nodeclass.Providers{
		AMIs:             amis,
		Subnets:          subnet.NewProvider(w.EC2, clk, subnet.DefaultRefreshInterval),
		SecurityGroups:   securitygroup.NewProvider(w.EC2, clk),
		Version:          versions,
		InstanceProfiles: instanceprofile.NewProvider(iam, clk, clusterName, "us-west-2"),
	})
	if err := env.Client.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), nc) })
	// resolve runs the nodeclass controller once and returns the IDs in
	// status.amis.
	resolve := func(t *testing.T) []string {
		t.Helper()
		if _, err := reconcile.AsReconciler(env.Client, controller).Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err != nil {
			t.Fatal(err)
		}
		got := &awsv1.EC2NodeClass{}
		if err := env.Client.Get(ctx, types.NamespacedName{Name: nc.Name}, got); err != nil {
			t.Fatal(err)
		}
		if !got.StatusConditions().IsTrue(awsv1.ConditionTypeReady) {
			t.Fatalf("EC2NodeClass not Ready: %+v", got.Status.Conditions)
		}
		var ids []string
		for _, a := range got.Status.AMIs {
			ids = append(ids, a.ID)
		}
		return ids
	}
	verdicts := func(t *testing.T, claims ...*karpv1.NodeClaim) []string {
		t.Helper()
		var out []string
		for _, c := range claims {
			out = append(out, string(isDrifted(t, w.Provider, c)))
		}
		return out
	}
	if ids := resolve(t); !slices.Contains(ids, first[amd64Standard("1.31")]) {
		t.Fatalf("status.amis %v, want the published %s", ids, first[amd64Standard("1.31")])
	}
	old := launch(t, w, amd64(newNodeClaim("ssm", nc.Name)))
	if old.Status.ImageID != first[amd64Standard("1.31")] {
		t.Fatalf("launched image %s, want %s", old.Status.ImageID, first[amd64Standard("1.31")])
	}
	if got := verdicts(t, old); got[0] != "" {
		t.Fatalf("fresh node: IsDrifted = %q, want not drifted", got[0])
	}

	// 1. AWS publishes a new release. The alias parameter is cached for a
	// day, as upstream: one AMI refresh later nothing has moved yet.
	second := amitest.Publish(w.EC2, ssm, "al2023@latest", "1.31", clk.Now().Add(-time.Hour))
	clk.Step(ami.DefaultRefreshInterval + time.Second)
	if ids := resolve(t); slices.Contains(ids, second[amd64Standard("1.31")]) {
		t.Fatalf("status.amis %v took the release before the parameter cache expired", ids)
	}
	if got := verdicts(t, old); got[0] != "" {
		t.Errorf("before the status changes: IsDrifted = %q, want not drifted", got[0])
	}
	// Once the parameter's cached value expires, the release reaches the
	// status and the node drifts; a node launched now runs the release
	// and is not drifted.
	clk.Step(ami.AliasParameterTTL)
	if ids := resolve(t); !slices.Contains(ids, second[amd64Standard("1.31")]) || slices.Contains(ids, first[amd64Standard("1.31")]) {
		t.Fatalf("status.amis %v, want the release %s instead of %s", ids, second[amd64Standard("1.31")], first[amd64Standard("1.31")])
	}
	replacement := launch(t, w, amd64(newNodeClaim("ssm", nc.Name)))
	if replacement.Status.ImageID != second[amd64Standard("1.31")] {
		t.Fatalf("replacement image %s, want %s", replacement.Status.ImageID, second[amd64Standard("1.31")])
	}
	if got := verdicts(t, old, replacement); !slices.Equal(got, []string{string(aws.AMIDrift), ""}) {
		t.Errorf("after the release: IsDrifted = %q, want [AMIDrift, not drifted]", got)
	}

	// 2. The control plane is upgraded: the alias reads the new version's
	// parameters (never cached yet) at the next AMI refresh.
	upgraded := amitest.Publish(w.EC2, ssm, "al2023@latest", "1.32", clk.Now().Add(-time.Hour))
	versions.set("1.32")
	clk.Step(ami.DefaultRefreshInterval + time.Second)
	if ids := resolve(t); !slices.Contains(ids, upgraded[amd64Standard("1.32")]) {
		t.Fatalf("status.amis %v, want the 1.32 AMI %s", ids, upgraded[amd64Standard("1.32")])
	}
	if got := verdicts(t, old, replacement); !slices.Equal(got, []string{string(aws.AMIDrift), string(aws.AMIDrift)}) {
		t.Errorf("after the upgrade: IsDrifted = %q, want both AMIDrift", got)
	}

	// 3. An SSM outage once the parameters' cached values expire: the
	// controller reports the error and keeps the AMIs it resolved, so the
	// verdicts stand.
	upgradedNode := launch(t, w, amd64(newNodeClaim("ssm", nc.Name)))
	clk.Step(ami.AliasParameterTTL + time.Second)
	ssm.FailNext("GetParameter", 100, fake.Throttling("GetParameter"))
	if _, err := reconcile.AsReconciler(env.Client, controller).Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}}); err == nil {
		t.Error("reconcile during an SSM outage succeeded, want the error")
	}
	got := &awsv1.EC2NodeClass{}
	if err := env.Client.Get(ctx, types.NamespacedName{Name: nc.Name}, got); err != nil {
		t.Fatal(err)
	}
	if !got.StatusConditions().IsTrue(awsv1.ConditionTypeAMIsReady) || !slices.ContainsFunc(got.Status.AMIs, func(a awsv1.AMI) bool { return a.ID == upgraded[amd64Standard("1.32")] }) {
		t.Errorf("during the outage: AMIsReady %+v, amis %v; want the 1.32 AMIs kept", got.StatusConditions().Get(awsv1.ConditionTypeAMIsReady), got.Status.AMIs)
	}
	if got := verdicts(t, old, upgradedNode); !slices.Equal(got, []string{string(aws.AMIDrift), ""}) {
		t.Errorf("during the outage: IsDrifted = %q, want [AMIDrift, not drifted]", got)
	}
}
