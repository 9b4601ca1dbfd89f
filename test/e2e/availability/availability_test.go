package availability

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

const (
	// readyDelay is how long each pod takes from binding to Ready.
	readyDelay = 5 * time.Second
	// registrationDelay is how long each node takes to register: what a
	// pod waits when its node is launched only after its eviction.
	registrationDelay = 8 * time.Second
	// instanceType holds three of the 500m pods.
	instanceType = "c5.large"
	// expireAfter gives the pods time to run first, and the window time
	// to end before the replacements near their own expiry.
	expireAfter = 90 * time.Second
)

// app is one Deployment of the workload and its rollout budget.
type app struct {
	name           string
	replicas       int32
	maxUnavailable int32
}

var apps = []app{{"web", 6, 1}, {"api", 3, 1}} // web: the default 25% of 6, rounded down, at least 1

// TestDisruptionKeepsDeploymentsWithinTheirRolloutBudget: Deployments
// with no PDB whose pods take 5 s to become Ready, on nodes that take 8 s
// to register, with a 100% disruption budget (nothing but karp's own
// rules holds the drains back). Through a drift of every node, a
// consolidation, an expiry of every node and a spot interruption notice
// for every node, no Deployment ever has fewer available pods than
// replicas - maxUnavailable; during the expiry and the interruption every
// pod the drains recreate lands on a node that was initialized before the
// pod was created (its replacement was ready before the drain began), so
// none waits for a launch. The baseline run (make availability) also
// measures a repair (one node of three stops reporting Ready), which has
// no floor to assert: the broken node's pods are unavailable before any
// drain.
func TestDisruptionKeepsDeploymentsWithinTheirRolloutBudget(t *testing.T) {
	baseline := os.Getenv("KARP_E2E_AVAILABILITY_BASELINE") == "1"
	phases := []string{"drift", "consolidation", "expiry", "interruption"}
	if baseline {
		phases = append(phases, "repair")
	}
	for _, phase := range phases {
		t.Run(phase, func(t *testing.T) {
			// Each run in its own subtest: its controller stops with it,
			// before the next run starts its own (a second one would only
			// stand by for the first one's lease).
			var on, off result
			t.Run("protected", func(t *testing.T) {
				on = run(t, phase, true)
				if phase == "repair" {
					return // measured only: a broken node's pods are unavailable before any drain
				}
				if msg := on.violations(); msg != "" {
					t.Errorf("%s with karp's protections: %s", phase, msg)
				}
			})
			t.Logf("%s, protections on: %s", phase, on.summary)
			if !baseline {
				return
			}
			t.Run("upstream", func(t *testing.T) { off = run(t, phase, false) })
			t.Logf("%s, protections off (upstream): %s; what the protections prevent: %s", phase, off.summary, orNone(off.violations()))
		})
	}
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// result is what one phase's window saw.
type result struct {
	lowest  map[string]int
	late    []string // expiry: pods created before the node they run on was initialized
	summary string
}

// violations says what broke the rollout budgets or, for the expiry, the
// replacement-first order.
func (r result) violations() string {
	var out []string
	for _, a := range apps {
		if floor := int(a.replicas - a.maxUnavailable); r.lowest[a.name] < floor {
			out = append(out, fmt.Sprintf("%s fell to %d available, below its rollout budget's %d", a.name, r.lowest[a.name], floor))
		}
	}
	if len(r.late) > 0 {
		out = append(out, fmt.Sprintf("%d pod(s) waited for their node to launch: %v", len(r.late), r.late))
	}
	return strings.Join(out, "; ")
}

// run sets up a pool and the workload, disrupts every node by phase, and
// returns what the window saw.
func run(t *testing.T, phase string, on bool) result {
	name := "e2e-avail-" + phase
	if !on {
		name += "-off"
	}
	consolidateAfter := karpv1.Never
	if phase == "consolidation" {
		consolidateAfter = "10s"
	}
	capacityType := karpv1.CapacityTypeOnDemand
	if phase == "interruption" {
		capacityType = karpv1.CapacityTypeSpot
	}
	pw := test.MakeNodePool(name).
		Labels(map[string]string{"rollout": "v1"}).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, capacityType).
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, instanceType).
		Budgets(karpv1.Budget{Nodes: "100%"}).
		ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).
		ConsolidateAfter(karpv1.MustParseNillableDuration(consolidateAfter))
	if phase == "expiry" {
		pw = pw.ExpireAfter(karpv1.NewNillableDuration(expireAfter))
	}
	args := slices.Clone(framework.FastDisruptionArgs)
	if phase == "repair" {
		args = append(args, "--feature-gates=NodeRepair=true", "--node-repair-toleration=15s")
	}
	if !on {
		args = append(args, "--respect-rollout-budget=false", "--replace-first=false")
	}
	f, _ := framework.RunPool(t, name, pw.Obj(), args...)
	cl := f.Client
	nodeClass := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	framework.Mutate(t, cl, nodeClass, func() {
		nodeClass.Spec.NodeRegistrationDelay = &metav1.Duration{Duration: registrationDelay}
	})

	watch := framework.WatchAvailability(t, f, name)
	want := 0
	for _, a := range apps {
		framework.Create(t, cl, deployment(a, name))
		want += int(a.replicas)
	}
	if phase == "consolidation" {
		// One 1-cpu pod per node keeps the first nodes full; deleting them
		// leaves those nodes underutilized.
		framework.Create(t, cl, deployment(app{name: "filler", replicas: 3, maxUnavailable: 1}, name, "1"))
		want += 3
	}
	framework.Eventually(t, 3*time.Minute, func(ctx context.Context) (bool, string) {
		n := len(framework.AvailablePods(ctx, cl, name, nil))
		return n == want, fmt.Sprintf("%d of %d pods available", n, want)
	})
	original := framework.PoolNodeClaimsByName(t.Context(), cl, name)
	broken := "" // repair: the node made unhealthy
	watch.Reset()

	switch phase {
	case "drift":
		pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		framework.Mutate(t, cl, pool, func() { pool.Spec.Template.ObjectMeta.Labels["rollout"] = "v2" })
	case "consolidation":
		filler := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "filler", Namespace: name}}
		framework.Mutate(t, cl, filler, func() { filler.Spec.Replicas = new(int32) })
		want -= 3
	case "interruption":
		// A spot interruption notice (two minutes) for every node at once.
		for _, nc := range original {
			out, err := exec.Command(framework.KarpBinary(t), "interrupt", "--kubeconfig", f.Cluster.Kubeconfig, nc.Status.NodeName).CombinedOutput()
			if err != nil {
				t.Fatalf("karp interrupt %s: %v\n%s", nc.Status.NodeName, err, out)
			}
		}
	case "repair":
		// One node of the three stops reporting Ready (repair takes at
		// most a fifth of a pool at a time, rounded up).
		for _, nc := range original {
			broken = nc.Status.NodeName
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}}
			framework.Mutate(t, cl, node, func() {
				if node.Annotations == nil {
					node.Annotations = map[string]string{}
				}
				node.Annotations[localcluster.KWOKReadyAnnotationKey] = localcluster.KWOKNotReadyValue
			})
			original = map[string]karpv1.NodeClaim{nc.Name: nc}
			break
		}
	}

	// The window ends when every original node is gone (for the
	// consolidation: when at most two-thirds remain) and every pod is
	// available again (for the repair: off the broken node, whose pods the
	// API may still show Ready after it is gone).
	framework.Eventually(t, 5*time.Minute, func(ctx context.Context) (bool, string) {
		claims := framework.PoolNodeClaimsByName(ctx, cl, name)
		left, deleting := 0, 0
		for n, nc := range claims {
			if _, ok := original[n]; ok {
				left++
			}
			if nc.DeletionTimestamp != nil {
				deleting++
			}
		}
		gone := left == 0
		if phase == "consolidation" {
			gone = left*3 <= len(original)*2 && deleting == 0
		}
		n := 0
		for _, p := range framework.AvailablePods(ctx, cl, name, nil) {
			if p.Spec.NodeName != broken {
				n++
			}
		}
		return gone && n == want, fmt.Sprintf("%d of %d original NodeClaims left (%d deleting), %d of %d pods available; %s",
			left, len(original), deleting, n, want, watch.Summary())
	})

	res := result{lowest: map[string]int{}, summary: watch.Summary()}
	for _, a := range apps {
		res.lowest[a.name] = watch.Lowest(a.name)
	}
	if phase == "expiry" || phase == "interruption" {
		res.late = watch.WaitedForLaunch(t.Context(), cl, name)
	}
	return res
}

// deployment is the app's Deployment in namespace: pause pods of cpu
// (500m by default) kept to the pool, taking readyDelay to become Ready,
// with the app's maxUnavailable and no PDB.
func deployment(a app, namespace string, cpu ...string) *appsv1.Deployment {
	req := "500m"
	if len(cpu) > 0 {
		req = cpu[0]
	}
	d := framework.Deployment(a.name, namespace, namespace, a.replicas, req)
	d.Spec.Template.Annotations = map[string]string{localcluster.KWOKPodReadyDelayAnnotationKey: readyDelay.String()}
	if a.name == "api" {
		mu := intstr.FromInt32(a.maxUnavailable)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &mu}}
	}
	return d
}
