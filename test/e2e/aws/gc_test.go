package aws_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

// TestLeakedInstanceIsTerminated launches, directly in the simulated EC2,
// an instance tagged as karp tags its own for this cluster but with no
// NodeClaim, and checks karp terminates it, while the instance of a real
// NodeClaim keeps running.
func TestLeakedInstanceIsTerminated(t *testing.T) {
	const name = "e2e-leak"
	e := awsenv.Start(t)
	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name))
	framework.Create(t, e.Client, framework.Deployment(name, name, name, 1, "500m"))
	pods := e.WaitAvailable(t, name, 1)
	kept := framework.NodeClaimOfNode(t, e.Client, pods[0].Spec.NodeName)

	leaked, err := e.Sim.CreateLeakedInstance(t.Context(), "m5.large", name, name)
	if err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, awsenv.ScaleTimeout, func(context.Context) (bool, string) {
		inst, _ := e.Sim.Instance(leaked)
		return !awsenv.Live(inst), fmt.Sprintf("leaked instance %s is %s", leaked, inst.State.Name)
	})
	inst, ok := e.InstanceOf(kept.Status.ProviderID)
	if !ok || !awsenv.Live(inst) {
		t.Errorf("the instance of NodeClaim %s (%s) was terminated too", kept.Name, kept.Status.ProviderID)
	}
	if n := len(framework.AvailablePods(t.Context(), e.Client, name, nil)); n != 1 {
		t.Errorf("%d of 1 pods available after garbage collection", n)
	}
}

// TestControllerKilledAfterCreateFleet holds the answer of the first
// CreateFleet (EC2 has launched the instance), kills the controller with
// SIGKILL while the NodeClaim does not know its instance yet, starts it
// again, and checks the NodeClaim ends with exactly one live instance and
// no instance of the cluster is left without a NodeClaim.
func TestControllerKilledAfterCreateFleet(t *testing.T) {
	const name = "e2e-restart"
	e := awsenv.Start(t)
	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name))

	e.Sim.Router().HoldAfter("ec2", "CreateFleet", 1)
	launched := len(e.Sim.Instances())
	framework.Create(t, e.Client, framework.Deployment(name, name, name, 1, "500m"))
	var held karpv1.NodeClaim
	framework.Eventually(t, awsenv.ScaleTimeout, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaims(ctx, e.Client, name)
		if len(claims) == 1 {
			held = claims[0]
		}
		return len(claims) == 1 && len(e.Sim.Instances()) > launched,
			fmt.Sprintf("%d NodeClaims, %d instances launched by the held CreateFleet", len(claims), len(e.Sim.Instances())-launched)
	})
	t.Logf("CreateFleet held for NodeClaim %s; killing the controller", held.Name)
	e.Karp.Stop(syscall.SIGKILL)
	e.Karp.Restart(t)
	if held.Status.ProviderID != "" {
		t.Fatalf("NodeClaim %s already had its instance %s: the CreateFleet answer was not held", held.Name, held.Status.ProviderID)
	}

	framework.Eventually(t, awsenv.ScaleTimeout, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaims(ctx, e.Client, name)
		byClaim := map[string]int{}
		orphans := 0
		for _, inst := range e.Sim.Instances() {
			if !awsenv.Live(inst) || tag(inst, awsv1.TagNodePool) != name {
				continue
			}
			owner := tag(inst, awsv1.TagNodeClaim)
			found := false
			for _, nc := range claims {
				if nc.Name == owner && nc.Status.ProviderID != "" {
					found = true
				}
			}
			if !found {
				orphans++
				continue
			}
			byClaim[owner]++
		}
		available := len(framework.AvailablePods(ctx, e.Client, name, nil))
		stillThere := false
		for _, nc := range claims {
			stillThere = stillThere || nc.Name == held.Name
		}
		return stillThere && byClaim[held.Name] == 1 && orphans == 0 && len(claims) == 1 && available == 1,
			fmt.Sprintf("NodeClaim %s exists %t with %d live instances; %d NodeClaims; %d live instances without one; %d of 1 pods available",
				held.Name, stillThere, byClaim[held.Name], len(claims), orphans, available)
	})
	t.Logf("NodeClaim %s has exactly one live instance", held.Name)
	if id := aws.ToString(e.Sim.Instances()[launched].InstanceId); id == "" {
		t.Error("the held CreateFleet launched no instance")
	}
}
