package simulation

import (
	"fmt"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/catalog"
	"github.com/karp-autoscaler/karp/pkg/test/fixtures"
)

// exampleInput loads the user manifests from examples/ (single-document
// files) against the EC2 catalog.
func exampleInput(t *testing.T, nodePools []string, deployment string, daemonSets ...string) Input {
	t.Helper()
	examples := fixtures.Example(t, "")
	its, err := catalog.LoadFile(fixtures.EC2Catalog(t), catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	in := Input{}
	for _, f := range nodePools {
		np := &karpv1.NodePool{}
		readYAML(t, filepath.Join(examples, f), np)
		in.NodePools = append(in.NodePools, &NodePool{NodePool: np, InstanceTypes: its})
	}
	for _, f := range daemonSets {
		ds := &appsv1.DaemonSet{}
		readYAML(t, filepath.Join(examples, f), ds)
		in.DaemonSets = append(in.DaemonSets, ds)
	}
	d := &appsv1.Deployment{}
	readYAML(t, filepath.Join(examples, deployment), d)
	for i := 0; i < int(*d.Spec.Replicas); i++ {
		name := fmt.Sprintf("%s-%d", d.Name, i)
		in.Pods = append(in.Pods, &corev1.Pod{ObjectMeta: *d.Spec.Template.ObjectMeta.DeepCopy(), Spec: *d.Spec.Template.Spec.DeepCopy()})
		in.Pods[i].Name, in.Pods[i].Namespace, in.Pods[i].UID = name, "default", types.UID(name)
	}
	return in
}

func TestExampleGPUDeployment(t *testing.T) {
	in := exampleInput(t, []string{"nodepool-gpu.yaml"}, "deployment-inflate-gpu.yaml", "daemonset-all-nodes.yaml")
	res := Solve(t.Context(), in)
	checkInvariants(t, in, res)
	if len(res.PodErrors) > 0 || len(res.NodeClaims) != 1 {
		t.Fatalf("%d NodeClaims, errors %v", len(res.NodeClaims), res.PodErrors)
	}
	nc := res.NodeClaims[0]
	if nc.InstanceType.Name != "p3.8xlarge" || nc.Offering.CapacityType != karpv1.CapacityTypeOnDemand {
		t.Fatalf("launched %s %s, want p3.8xlarge on-demand", nc.InstanceType.Name, nc.Offering.CapacityType)
	}
	if cpu := nc.DaemonOverhead[corev1.ResourceCPU]; cpu.String() != "200m" {
		t.Fatalf("daemon overhead cpu %s, want the log collector's 200m", cpu.String())
	}
}

func TestExampleBillingTeamDeployment(t *testing.T) {
	in := exampleInput(t, []string{"nodepool-generalcompute.yaml"}, "deployment-my-team.yaml", "daemonset-all-nodes.yaml")
	res := Solve(t.Context(), in)
	checkInvariants(t, in, res)
	if len(res.PodErrors) > 0 {
		t.Fatalf("errors %v", res.PodErrors[0].Status.Message())
	}
	allowed := map[string]bool{"m5.large": true, "m5.xlarge": true, "m5.2xlarge": true, "c5.large": true, "c5.xlarge": true,
		"c5a.large": true, "c5a.xlarge": true, "r5.large": true, "r5.xlarge": true}
	total := 0
	for _, nc := range res.NodeClaims {
		total += len(nc.Pods)
		for _, it := range nc.InstanceTypes {
			if !allowed[it.Name] {
				t.Fatalf("NodeClaim lists %s", it.Name)
			}
		}
		if r := nc.Requirements.Get("billing-team"); r == nil || !r.Has("my-team") {
			t.Fatalf("billing-team label missing from %s", nc.Requirements)
		}
	}
	if total != 200 {
		t.Fatalf("%d pods on NodeClaims, want 200", total)
	}
	t.Logf("200 pods on %d NodeClaims, $%.3f/h", len(res.NodeClaims), res.Cost())
}
