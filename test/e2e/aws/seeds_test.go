package aws_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

// The seed workloads and the types they must run on.
var (
	seedFiles = []string{"nodepools-default-stable.yaml", "nodepool-gpu.yaml", "nodepool-generalcompute.yaml",
		"daemonset-all-nodes.yaml", "deployment-inflate-gpu.yaml", "deployment-my-team.yaml", "nginx-demo.yaml"}
	gpuTypes    = []string{"p3.8xlarge", "p3.16xlarge"}
	myTeamTypes = []string{"m5.large", "m5.xlarge", "m5.2xlarge", "c5.large", "c5.xlarge", "c5a.large", "c5a.xlarge", "r5.large", "r5.xlarge"}
	seedPools   = []string{"default", "stable", "gpu", "generalcompute"}
)

// TestSeedScenariosProvisionThroughCreateFleet applies the seed user
// documents' NodePools and workloads, with the NodePools' nodeClassRef
// pointed at an EC2NodeClass as an AWS user's are, and checks every pod
// runs where its NodePool says on instances the simulated EC2 launched
// through CreateFleet: GPU pods on p3 on-demand, my-team on its listed
// types, and on every node the DaemonSet plus the pods within the
// allocatable the node's kubelet reports, which is exactly the allocatable
// karp predicted for the NodeClaim.
func TestSeedScenariosProvisionThroughCreateFleet(t *testing.T) {
	e := awsenv.Start(t)
	e.CreateNodeClass(t, e.NodeClass("default"))
	e.DeleteOnCleanup(t, nil, seedPools, []string{"default"})
	t.Cleanup(func() { deleteSeedWorkloads(t, e.Client) })
	applySeeds(t, e.Client)

	framework.Eventually(t, awsenv.ScaleTimeout, func(ctx context.Context) (bool, string) { return seedsPlaced(ctx, e) })
	if n := e.Sim.Router().Calls("ec2", "CreateFleet"); n == 0 {
		t.Error("no CreateFleet call reached the simulated EC2")
	}
}

// applySeeds creates the seed manifests with every NodePool on the
// EC2NodeClass "default" (the KWOKNodeClass of the kwok examples is left
// out). The NodePools go first, and the workloads once every NodePool is
// Ready: both the default and the gpu pool can run the GPU pods, and a
// pod that arrives while only one of them is Ready goes to that one, so
// on a loaded machine the placement checked below would otherwise depend
// on which pool's readiness was reconciled first.
func applySeeds(t *testing.T, cl client.Client) {
	t.Helper()
	var paths []string
	for _, name := range seedFiles {
		paths = append(paths, fixtures.Example(t, name))
	}
	objs, err := localcluster.ReadManifests(paths)
	if err != nil {
		t.Fatal(err)
	}
	var workloads []*unstructured.Unstructured
	for _, obj := range objs {
		switch obj.GetKind() {
		case "KWOKNodeClass":
			continue
		case "NodePool":
			ref := map[string]any{"group": awsv1.Group, "kind": awsv1.Kind, "name": "default"}
			if err := unstructured.SetNestedMap(obj.Object, ref, "spec", "template", "spec", "nodeClassRef"); err != nil {
				t.Fatal(err)
			}
			framework.Create(t, cl, obj)
			continue
		}
		if obj.GetNamespace() == "" && obj.GetKind() != "PriorityClass" {
			obj.SetNamespace("default")
		}
		workloads = append(workloads, obj)
	}
	framework.Eventually(t, awsenv.ScaleTimeout, func(ctx context.Context) (bool, string) {
		for _, name := range seedPools {
			np := &karpv1.NodePool{}
			if err := cl.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
				return false, err.Error()
			}
			if !np.StatusConditions().IsTrue(karpv1.ConditionTypeReady) {
				return false, "NodePool " + name + " not Ready yet"
			}
		}
		return true, ""
	})
	for _, obj := range workloads {
		framework.Create(t, cl, obj)
	}
}

func deleteSeedWorkloads(t *testing.T, cl client.Client) {
	objs, err := localcluster.ReadManifests(func() []string {
		var paths []string
		for _, name := range seedFiles {
			paths = append(paths, fixtures.Example(t, name))
		}
		return paths
	}())
	if err != nil {
		return
	}
	for _, obj := range objs {
		if obj.GetKind() == "NodePool" || obj.GetKind() == "KWOKNodeClass" {
			continue
		}
		if obj.GetNamespace() == "" {
			obj.SetNamespace("default")
		}
		_ = cl.Delete(context.Background(), obj)
	}
}

// seedsPlaced reports whether every seed workload runs where its NodePool
// says and every node is sound (see nodeSound).
func seedsPlaced(ctx context.Context, e *awsenv.Env) (bool, string) {
	var nodeList corev1.NodeList
	if err := e.Client.List(ctx, &nodeList, client.HasLabels{karpv1.NodePoolLabelKey}); err != nil {
		return false, err.Error()
	}
	nodes := map[string]*corev1.Node{}
	for i := range nodeList.Items {
		nodes[nodeList.Items[i].Name] = &nodeList.Items[i]
	}
	want := map[string]int{"inflate-gpu": 3, "workload-my-team": 200, "nginx-demo": 2}
	placed := map[string][]corev1.Pod{}
	for app, n := range want {
		var pods corev1.PodList
		if err := e.Client.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"app": app}); err != nil {
			return false, err.Error()
		}
		running := 0
		for i := range pods.Items {
			if framework.Available(&pods.Items[i]) && nodes[pods.Items[i].Spec.NodeName] != nil {
				running++
			}
		}
		if running != n || len(pods.Items) != n {
			return false, fmt.Sprintf("%s: %d of %d pods running on karp nodes (%d exist)", app, running, n, len(pods.Items))
		}
		placed[app] = pods.Items
	}
	for _, pod := range placed["inflate-gpu"] {
		node := nodes[pod.Spec.NodeName]
		inst, ok := e.InstanceOf(node.Spec.ProviderID)
		if !ok {
			return false, "no simulated instance " + node.Spec.ProviderID
		}
		if node.Labels[karpv1.NodePoolLabelKey] != "gpu" || !slices.Contains(gpuTypes, string(inst.InstanceType)) ||
			inst.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot {
			return false, fmt.Sprintf("inflate-gpu pod %s on %s: pool %q instance %s %s lifecycle %q", pod.Name, node.Name,
				node.Labels[karpv1.NodePoolLabelKey], *inst.InstanceId, inst.InstanceType, inst.InstanceLifecycle)
		}
	}
	for _, pod := range placed["workload-my-team"] {
		node := nodes[pod.Spec.NodeName]
		inst, ok := e.InstanceOf(node.Spec.ProviderID)
		if !ok {
			return false, "no simulated instance " + node.Spec.ProviderID
		}
		if node.Labels["billing-team"] != "my-team" || !slices.Contains(myTeamTypes, string(inst.InstanceType)) {
			return false, fmt.Sprintf("my-team pod %s on %s: billing-team %q instance type %s", pod.Name, node.Name, node.Labels["billing-team"], inst.InstanceType)
		}
	}
	if nginx := placed["nginx-demo"]; nginx[0].Spec.NodeName == nginx[1].Spec.NodeName {
		return false, "both nginx-demo replicas on " + nginx[0].Spec.NodeName
	}
	return nodesSound(ctx, e, nodeList.Items)
}

// nodesSound reports whether every karp node is a live simulated instance
// of its labelled type, runs a log-collector pod, holds pods within its
// allocatable, and reports the allocatable karp predicted for its
// NodeClaim.
func nodesSound(ctx context.Context, e *awsenv.Env, nodes []corev1.Node) (bool, string) {
	var pods corev1.PodList
	var claims karpv1.NodeClaimList
	if err := e.Client.List(ctx, &pods); err != nil {
		return false, err.Error()
	}
	if err := e.Client.List(ctx, &claims); err != nil {
		return false, err.Error()
	}
	claimOf := map[string]*karpv1.NodeClaim{}
	for i := range claims.Items {
		claimOf[claims.Items[i].Status.ProviderID] = &claims.Items[i]
	}
	if ok, why := framework.DaemonOnEachAndFits(nodes, pods.Items, "log-collector"); !ok {
		return false, why
	}
	for _, node := range nodes {
		inst, ok := e.InstanceOf(node.Spec.ProviderID)
		if !ok {
			return false, fmt.Sprintf("node %s: no simulated instance %s", node.Name, node.Spec.ProviderID)
		}
		if !awsenv.Live(inst) || string(inst.InstanceType) != node.Labels[corev1.LabelInstanceTypeStable] {
			return false, fmt.Sprintf("node %s: instance %s is %s %s", node.Name, *inst.InstanceId, inst.InstanceType, inst.State.Name)
		}
		claim := claimOf[node.Spec.ProviderID]
		if claim == nil {
			return false, fmt.Sprintf("node %s has no NodeClaim", node.Name)
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
			predicted, got := claim.Status.Allocatable[name], node.Status.Allocatable[name]
			if predicted.Cmp(got) != 0 {
				return false, fmt.Sprintf("node %s (%s): kubelet allocatable %s %s, karp predicted %s", node.Name, inst.InstanceType, name, got.String(), predicted.String())
			}
		}
	}
	return true, ""
}
