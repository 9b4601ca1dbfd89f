package awsprovisioning_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/controllers/provisioning"
	statecontrollers "github.com/karp-autoscaler/karp/pkg/controllers/state"
	"github.com/karp-autoscaler/karp/pkg/manifest"
	"github.com/karp-autoscaler/karp/pkg/simulate"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awstest"
	"github.com/karp-autoscaler/karp/pkg/test/controllertest"
	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

var env *environment.Environment

func TestMain(m *testing.M) { environment.Main(m, &env) }

// run is one scale-out: the provisioner on the AWS provider over the fakes.
type run struct {
	h         *controllertest.Harness
	world     *awstest.World
	nodeClass *awsv1.EC2NodeClass
}

func newRun(t *testing.T) *run {
	t.Helper()
	// The harness's fake provider is unused: the provisioner below runs on
	// the AWS provider.
	h := controllertest.New(t, env, statecontrollers.Register, fake.New())
	w := awstest.NewWorld(t, env)
	nodeClass := awstest.CreateNodeClass(t, h.Client, awstest.NewNodeClass(nil), true)
	return &run{h: h, world: w, nodeClass: nodeClass}
}

// load reads the seed manifests with every NodePool on the run's
// EC2NodeClass instead of the kwok one the seeds name.
func (r *run) load(t *testing.T, files ...string) *manifest.Set {
	t.Helper()
	var paths []string
	for _, f := range files {
		paths = append(paths, filepath.Join("testdata", "seeds", f))
	}
	set, err := manifest.Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	for _, np := range set.NodePools {
		np.Spec.Template.Spec.NodeClassRef = awsv1.NodeClassReference(r.nodeClass.Name)
	}
	return set
}

// provision creates the set's NodePools and pending pods, runs one
// provisioning pass and launches every NodeClaim it created through the
// AWS provider, concurrently as the lifecycle controller would.
func (r *run) provision(t *testing.T, set *manifest.Set) []string {
	t.Helper()
	expanded, err := manifest.Expand(set)
	if err != nil {
		t.Fatal(err)
	}
	return r.provisionPods(t, set, expanded.Pending)
}

// provisionPods is provision with the pending pods given.
func (r *run) provisionPods(t *testing.T, set *manifest.Set, pending []*corev1.Pod) []string {
	t.Helper()
	for _, np := range set.NodePools {
		r.h.ReadyNodePool(np.DeepCopy())
	}
	r.pending(t, pending)
	provisioner := provisioning.NewProvisioner(r.h.Manager.GetClient(), r.world.Provider, r.h.Cluster,
		r.h.Manager.GetEventRecorder("karp"), r.h.Clock, provisioning.DefaultOptions())
	r.h.StateSynced()
	res, err := provisioner.Schedule(r.h.Ctx)
	if err != nil {
		t.Fatalf("provisioning: %v", err)
	}
	errs := make([]error, len(res.Created))
	var wg sync.WaitGroup
	for i, name := range res.Created {
		wg.Go(func() {
			nc := &karpv1.NodeClaim{}
			if errs[i] = r.h.Client.Get(t.Context(), client.ObjectKey{Name: name}, nc); errs[i] == nil {
				_, errs[i] = r.world.Provider.Create(t.Context(), nc)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("launching %s: %v", res.Created[i], err)
		}
	}
	return res.Created
}

// pending creates the pods unschedulable, as the kube-scheduler leaves
// them, and waits until the cluster state sees them all.
func (r *run) pending(t *testing.T, pods []*corev1.Pod) {
	t.Helper()
	for _, pod := range pods {
		status := pod.Status
		r.h.Create(pod)
		pod.Status = status
		if err := r.h.Client.Status().Update(r.h.Ctx, pod); err != nil {
			t.Fatalf("marking pod %s unschedulable: %v", pod.Name, err)
		}
	}
	r.h.Eventually("pods provisionable in state", func() bool {
		n := 0
		for _, pod := range r.h.Cluster.ProvisionablePods() {
			if state.IsProvisionable(pod) {
				n++
			}
		}
		return n == len(pods)
	})
}

// cheapestLaunched lists, per instance a fleet asked for, the type of the
// fleet's cheapest override: what lowest-price and price-capacity-optimized
// launch while the pool has capacity.
func cheapestLaunched(inputs []*ec2.CreateFleetInput) []string {
	var out []string
	for _, in := range inputs {
		best, price := "", 0.0
		for _, cfg := range in.LaunchTemplateConfigs {
			for _, o := range cfg.Overrides {
				if p := awssdk.ToFloat64(o.Priority); best == "" || p < price {
					best, price = string(o.InstanceType), p
				}
			}
		}
		for range awssdk.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity) {
			out = append(out, best)
		}
	}
	slices.Sort(out)
	return out
}

// TestSeedWorkloadsLaunchWhatSimulatePicks turns each seed workload into
// CreateFleet calls and compares their cheapest instance types with the
// NodeClaims `karp simulate` plans on the same instance types.
func TestSeedWorkloadsLaunchWhatSimulatePicks(t *testing.T) {
	tests := map[string][]string{
		"GPU pods":                {"nodepool-gpu.yaml", "deployment-inflate-gpu.yaml"},
		"my-team on listed types": {"nodepool-generalcompute.yaml", "deployment-my-team.yaml"},
		"nginx-demo spread":       {"nodepools-default-stable.yaml", "nginx-demo.yaml"},
		"spot with diverse types": {"nodepool-spot.yaml", "nginx-do-not-disrupt.yaml"},
		"tainted and untainted":   {"nodepools-default-stable.yaml", "nginx-do-not-disrupt.yaml"},
	}
	for name, files := range tests {
		t.Run(name, func(t *testing.T) {
			r := newRun(t)
			set := r.load(t, files...)
			types, err := r.world.Provider.GetInstanceTypes(t.Context(), awstest.NodePool(r.nodeClass.Name))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := simulate.Simulate(t.Context(), set, types)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, nc := range rep.NodeClaims {
				want = append(want, nc.InstanceType)
			}
			slices.Sort(want)
			if len(want) == 0 {
				t.Fatal("karp simulate plans no NodeClaim for the seed")
			}

			created := r.provision(t, r.load(t, files...))
			if len(created) != len(want) {
				t.Errorf("the provisioner created %d NodeClaims, karp simulate plans %d", len(created), len(want))
			}
			got := cheapestLaunched(r.world.EC2.CreateFleetInputs())
			t.Logf("karp simulate plans %v; fleets launch %v", want, got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("cheapest instance types of the CreateFleet calls differ from karp simulate's (-simulate,+fleets):\n%s", diff)
			}
		})
	}
}

// fleetRequestKey identifies a CreateFleet request apart from its size and
// client token: requests with the same key are one launch request.
func fleetRequestKey(t *testing.T, in *ec2.CreateFleetInput) string {
	t.Helper()
	cp := *in
	cp.ClientToken = nil
	target := *cp.TargetCapacitySpecification
	target.TotalTargetCapacity = nil
	cp.TargetCapacitySpecification = &target
	raw, err := json.Marshal(&cp)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// ec2Operations are the EC2 calls the scale-out counts.
var ec2Operations = []string{
	"CreateFleet", "CreateTags", "DescribeInstances", "CreateLaunchTemplate", "DescribeLaunchTemplates",
	"DescribeInstanceTypes", "DescribeInstanceTypeOfferings", "DescribeSpotPriceHistory", "TerminateInstances",
}

// TestScaleOutEC2CallsPerNode provisions pending pods at once and counts
// the EC2 calls per launched node after warm-up (instance types and prices
// read once at start): 300 pods in `make test`, 1,000 with KARP_BENCH=1,
// whose log lines are the numbers docs/performance.md records (the larger
// run is half a minute of a core's work on its own).
func TestScaleOutEC2CallsPerNode(t *testing.T) {
	pods := 300
	if os.Getenv("KARP_BENCH") != "" {
		pods = 1000
	}
	r := newRun(t)
	set := r.load(t, "nodepools-default-stable.yaml")
	// Warm-up, as at process start.
	if _, err := r.world.Provider.GetInstanceTypes(t.Context(), awstest.NodePool(r.nodeClass.Name)); err != nil {
		t.Fatal(err)
	}
	r.world.EC2.ResetCalls()

	var pending []*corev1.Pod
	for i := range pods {
		// Three sizes, as a mixed scale-out.
		sizes := [][2]string{{"250m", "256Mi"}, {"500m", "1Gi"}, {"1", "2Gi"}}
		size := sizes[i%len(sizes)]
		pod := test.MakePod(fmt.Sprintf("scale-%04d", i)).Namespace(controllertest.Namespace).
			Requests("cpu", size[0], "memory", size[1]).Obj()
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		pending = append(pending, pod)
	}
	nodes := len(r.provisionPods(t, set, pending))
	if nodes == 0 {
		t.Fatalf("no NodeClaim created for %d pending pods", pods)
	}

	requests := map[string]bool{}
	for _, in := range r.world.EC2.CreateFleetInputs() {
		requests[fleetRequestKey(t, in)] = true
	}
	t.Logf("%d pods -> %d NodeClaims, %d distinct launch requests", pods, nodes, len(requests))
	for _, op := range ec2Operations {
		n := r.world.EC2.Calls(op)
		t.Logf("%-30s %5d calls  %.3f per node", op, n, float64(n)/float64(nodes))
	}
	if n := r.world.EC2.Calls("DescribeInstanceTypes"); n != 0 {
		t.Errorf("%d DescribeInstanceTypes calls after warm-up, want 0", n)
	}
	// Alike launches share calls: never near one CreateFleet per node.
	if fleets := r.world.EC2.Calls("CreateFleet"); fleets > len(requests)+nodes/4 {
		t.Errorf("%d CreateFleet calls for %d nodes and %d distinct requests, want close to one per distinct request", fleets, nodes, len(requests))
	}
	if launched := len(r.world.EC2.Instances()); launched != nodes {
		t.Errorf("%d instances for %d NodeClaims", launched, nodes)
	}
}
