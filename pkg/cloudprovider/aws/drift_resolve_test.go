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
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/ami"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/controllers/nodeclass"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/securitygroup"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/subnet"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
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

// resolving is the AWS provider beside the real EC2NodeClass status
// controller, both over the same fakes: subnets and a security group
// tagged for discovery in every zone, al2023@latest published for the
// cluster's version in SSM, an instance profile for the class's role. The
// AMI provider and the controller run on a clock the test moves.
type resolving struct {
	*world
	ssm        *fake.SSM
	clk        *clocktesting.FakeClock
	versions   *clusterVersion
	controller *nodeclass.Controller
	nodeClass  *awsv1.EC2NodeClass
	// released is the first release's image ID of each SSM parameter.
	released map[string]string
}

func newResolving(t *testing.T) *resolving {
	t.Helper()
	r := &resolving{world: newWorld(t), ssm: fake.NewSSM(), clk: clocktesting.NewFakeClock(clock.RealClock{}.Now()), versions: &clusterVersion{version: "1.31"}}
	iam := fake.NewIAM()
	r.EC2.SetImageClock(r.clk)
	for _, z := range zones {
		r.EC2.AddSubnets(fake.NewSubnet("subnet-"+z.Name, z.Name, z.ID, 200, map[string]string{"karpenter.sh/discovery": clusterName}))
	}
	r.EC2.AddSubnets(fake.NewSubnet("subnet-spare", zones[0].Name, zones[0].ID, 500, map[string]string{"karpenter.sh/discovery": "spare"}))
	r.EC2.AddSecurityGroups(
		fake.NewSecurityGroup("sg-nodes", "nodes", map[string]string{"karpenter.sh/discovery": clusterName}),
		fake.NewSecurityGroup("sg-spare", "spare", map[string]string{"karpenter.sh/discovery": "spare"}),
	)
	r.nodeClass = newNodeClass(nil)
	iam.AddInstanceProfile("KarpenterNodeInstanceProfile-test", r.nodeClass.Spec.Role)
	r.released = fake.PublishAMI(r.EC2, r.ssm, "al2023@latest", "1.31", r.clk.Now().Add(-48*time.Hour))
	r.controller = nodeclass.NewController(env.Client, nil, r.clk, nodeclass.Providers{
		AMIs:             ami.NewProvider(r.EC2, r.ssm, r.versions, r.clk, ami.DefaultRefreshInterval),
		Subnets:          subnet.NewProvider(r.EC2, r.clk, subnet.DefaultRefreshInterval),
		SecurityGroups:   securitygroup.NewProvider(r.EC2, r.clk),
		Version:          r.versions,
		InstanceProfiles: instanceprofile.NewProvider(iam, r.clk, clusterName, "us-west-2"),
	})
	if err := env.Client.Create(t.Context(), r.nodeClass); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.WithoutCancel(t.Context()), r.nodeClass) })
	return r
}

// reconcile runs the status controller once and returns the stored
// EC2NodeClass.
func (r *resolving) reconcile(t *testing.T) (*awsv1.EC2NodeClass, error) {
	t.Helper()
	ctx := t.Context()
	_, err := reconcile.AsReconciler(env.Client, r.controller).Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: r.nodeClass.Name}})
	got := &awsv1.EC2NodeClass{}
	if getErr := env.Client.Get(ctx, types.NamespacedName{Name: r.nodeClass.Name}, got); getErr != nil {
		t.Fatal(getErr)
	}
	return got, err
}

// resolve reconciles, requires the EC2NodeClass Ready and returns the IDs
// in status.amis.
func (r *resolving) resolve(t *testing.T) []string {
	t.Helper()
	got, err := r.reconcile(t)
	if err != nil {
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

// verdicts runs IsDrifted for each NodeClaim.
func (r *resolving) verdicts(t *testing.T, claims ...*karpv1.NodeClaim) []string {
	t.Helper()
	var out []string
	for _, c := range claims {
		out = append(out, string(isDrifted(t, r.Provider, c)))
	}
	return out
}

// TestAMIDriftFromSSM follows a release from SSM to the drift verdict: a
// new value of an al2023@latest parameter, the AMI provider reading it
// once its cached value expires, the nodeclass controller writing
// status.amis, and IsDrifted saying AMIDrift; then the same for a cluster
// upgrade, which moves the alias to another SSM path.
func TestAMIDriftFromSSM(t *testing.T) {
	r := newResolving(t)
	first := r.released
	if ids := r.resolve(t); !slices.Contains(ids, first[amd64Standard("1.31")]) {
		t.Fatalf("status.amis %v, want the published %s", ids, first[amd64Standard("1.31")])
	}
	old := launch(t, r.world, amd64(newNodeClaim("ssm", r.nodeClass.Name)))
	if old.Status.ImageID != first[amd64Standard("1.31")] {
		t.Fatalf("launched image %s, want %s", old.Status.ImageID, first[amd64Standard("1.31")])
	}
	if got := r.verdicts(t, old); got[0] != "" {
		t.Fatalf("fresh node: IsDrifted = %q, want not drifted", got[0])
	}

	// 1. AWS publishes a new release. The alias parameter is cached for a
	// day, as upstream: one AMI refresh later nothing has moved yet.
	second := fake.PublishAMI(r.EC2, r.ssm, "al2023@latest", "1.31", r.clk.Now().Add(-time.Hour))
	r.clk.Step(ami.DefaultRefreshInterval + time.Second)
	if ids := r.resolve(t); slices.Contains(ids, second[amd64Standard("1.31")]) {
		t.Fatalf("status.amis %v took the release before the parameter cache expired", ids)
	}
	if got := r.verdicts(t, old); got[0] != "" {
		t.Errorf("before the status changes: IsDrifted = %q, want not drifted", got[0])
	}
	// Once the parameter's cached value expires, the release reaches the
	// status and the node drifts; a node launched now runs the release
	// and is not drifted.
	r.clk.Step(ami.AliasParameterTTL)
	if ids := r.resolve(t); !slices.Contains(ids, second[amd64Standard("1.31")]) || slices.Contains(ids, first[amd64Standard("1.31")]) {
		t.Fatalf("status.amis %v, want the release %s instead of %s", ids, second[amd64Standard("1.31")], first[amd64Standard("1.31")])
	}
	replacement := launch(t, r.world, amd64(newNodeClaim("ssm", r.nodeClass.Name)))
	if replacement.Status.ImageID != second[amd64Standard("1.31")] {
		t.Fatalf("replacement image %s, want %s", replacement.Status.ImageID, second[amd64Standard("1.31")])
	}
	if got := r.verdicts(t, old, replacement); !slices.Equal(got, []string{string(aws.AMIDrift), ""}) {
		t.Errorf("after the release: IsDrifted = %q, want [AMIDrift, not drifted]", got)
	}

	// 2. The control plane is upgraded: the alias reads the new version's
	// parameters (never cached yet) at the next AMI refresh.
	upgraded := fake.PublishAMI(r.EC2, r.ssm, "al2023@latest", "1.32", r.clk.Now().Add(-time.Hour))
	r.versions.set("1.32")
	r.clk.Step(ami.DefaultRefreshInterval + time.Second)
	if ids := r.resolve(t); !slices.Contains(ids, upgraded[amd64Standard("1.32")]) {
		t.Fatalf("status.amis %v, want the 1.32 AMI %s", ids, upgraded[amd64Standard("1.32")])
	}
	if got := r.verdicts(t, old, replacement); !slices.Equal(got, []string{string(aws.AMIDrift), string(aws.AMIDrift)}) {
		t.Errorf("after the upgrade: IsDrifted = %q, want both AMIDrift", got)
	}

	// 3. An SSM outage once the parameters' cached values expire: the
	// controller reports the error and keeps the AMIs it resolved, so the
	// verdicts stand.
	upgradedNode := launch(t, r.world, amd64(newNodeClaim("ssm", r.nodeClass.Name)))
	r.clk.Step(ami.AliasParameterTTL + time.Second)
	r.ssm.FailNext("GetParameter", 100, fake.Throttling("GetParameter"))
	got, err := r.reconcile(t)
	if err == nil {
		t.Error("reconcile during an SSM outage succeeded, want the error")
	}
	if !got.StatusConditions().IsTrue(awsv1.ConditionTypeAMIsReady) || !slices.ContainsFunc(got.Status.AMIs, func(a awsv1.AMI) bool { return a.ID == upgraded[amd64Standard("1.32")] }) {
		t.Errorf("during the outage: AMIsReady %+v, amis %v; want the 1.32 AMIs kept", got.StatusConditions().Get(awsv1.ConditionTypeAMIsReady), got.Status.AMIs)
	}
	if got := r.verdicts(t, old, upgradedNode); !slices.Equal(got, []string{string(aws.AMIDrift), ""}) {
		t.Errorf("during the outage: IsDrifted = %q, want [AMIDrift, not drifted]", got)
	}
}

// TestSelectorChangesDrift changes the EC2NodeClass through the real
// status controller: a spec change is NodeClassDrift, a subnet or
// security-group selector that now picks other resources is SubnetDrift or
// SecurityGroupDrift (selectors are not part of the hash) once the
// controller has resolved the new spec.
func TestSelectorChangesDrift(t *testing.T) {
	tests := map[string]struct {
		edit func(*awsv1.EC2NodeClass)
		// before is the verdict between the edit and the controller
		// resolving it: the spec hash at once, the rest from the status
		// resolved before.
		before cloudprovider.DriftReason
		want   cloudprovider.DriftReason
	}{
		"tags": {
			edit:   func(nc *awsv1.EC2NodeClass) { nc.Spec.Tags = map[string]string{"team": "data"} },
			before: cloudprovider.NodeClassDrift,
			want:   cloudprovider.NodeClassDrift,
		},
		"subnet selector": {
			edit: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "spare"}}}
			},
			want: aws.SubnetDrift,
		},
		"security group selector": {
			edit: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "spare"}}}
			},
			want: aws.SecurityGroupDrift,
		},
		"security group selector adding a group": {
			edit: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.SecurityGroupSelectorTerms = append(nc.Spec.SecurityGroupSelectorTerms, awsv1.SecurityGroupSelectorTerm{ID: "sg-spare"})
			},
			want: aws.SecurityGroupDrift,
		},
		"subnet selector adding a subnet": {
			edit: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.SubnetSelectorTerms = append(nc.Spec.SubnetSelectorTerms, awsv1.SubnetSelectorTerm{ID: "subnet-spare"})
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := newResolving(t)
			r.resolve(t)
			node := launch(t, r.world, newNodeClaim("selector", r.nodeClass.Name))
			if got := r.verdicts(t, node); got[0] != "" {
				t.Fatalf("fresh node: IsDrifted = %q, want not drifted", got[0])
			}
			stored := &awsv1.EC2NodeClass{}
			if err := env.Client.Get(t.Context(), types.NamespacedName{Name: r.nodeClass.Name}, stored); err != nil {
				t.Fatal(err)
			}
			tc.edit(stored)
			if err := env.Client.Update(t.Context(), stored); err != nil {
				t.Fatal(err)
			}
			if got := r.verdicts(t, node); got[0] != string(tc.before) {
				t.Errorf("before the controller resolved the change: IsDrifted = %q, want %q", got[0], tc.before)
			}
			r.resolve(t)
			if got := r.verdicts(t, node); got[0] != string(tc.want) {
				t.Errorf("IsDrifted = %q, want %q", got[0], tc.want)
			}
		})
	}
}
