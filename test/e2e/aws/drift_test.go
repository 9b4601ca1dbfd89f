package aws_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/karp-autoscaler/karp/pkg/apis/aws/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
	"github.com/karp-autoscaler/karp/test/e2e/framework/awsenv"
)

// TestSSMAMIReleaseRollsEveryNode is the upgrade of seed 003: AWS
// publishes a newer al2023@latest in SSM and karp replaces every node, one
// at a time (the NodePool's budget), while a watcher sampling every 200 ms
// sees the PodDisruptionBudget always honoured and the do-not-disrupt pod
// never evicted. The replacements run the new AMI (their instances'
// ImageId). The do-not-disrupt pod's node is replaced only once the pod is
// gone.
func TestSSMAMIReleaseRollsEveryNode(t *testing.T) {
	const name = "e2e-ami"
	e := awsenv.Start(t)
	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name).Budgets(karpv1.Budget{Nodes: "1"}).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand))
	app := map[string]string{"app": name}
	framework.Create(t, e.Client, framework.SpreadOverHosts(framework.Deployment(name, name, name, 3, "500m")))
	framework.Create(t, e.Client, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: app}},
	})
	pinned := doNotDisruptPod(name, app)
	framework.Create(t, e.Client, pinned)
	e.WaitAvailable(t, name, 4)
	if err := e.Client.Get(t.Context(), client.ObjectKeyFromObject(pinned), pinned); err != nil {
		t.Fatal(err)
	}
	original := map[string]bool{}
	for _, nc := range framework.PoolNodeClaims(t.Context(), e.Client, name) {
		original[nc.Name] = true
	}
	// One node per pod (three spread pods and the do-not-disrupt pod). On
	// a loaded machine karp has launched one more (a pod found
	// provisionable again while the four nodes initialized); the pool
	// never consolidates, so such a node stays, and drift replaces (or,
	// empty, removes) it with the others.
	if len(original) < 4 {
		t.Fatalf("%d NodeClaims, want 4 (three spread pods and the do-not-disrupt pod)", len(original))
	}
	if len(original) > 4 {
		t.Logf("%d NodeClaims for the 4 pods: %v", len(original), original)
	}

	disrupting := framework.WatchBudgetedDisrupting(t, e.Framework, name, original)
	watcher := watchSafety(t, e.Client, name, app, 2, pinned)
	released := e.Sim.PublishAMI("al2023@latest")
	newImages := map[string]bool{}
	for _, id := range released {
		newImages[id] = true
	}

	// 1. Every node but the do-not-disrupt pod's is replaced.
	framework.Eventually(t, driftTimeout, func(ctx context.Context) (bool, string) {
		return rolled(ctx, e, name, original, newImages, 1, 3)
	})
	if v := watcher.violations(); len(v) > 0 {
		t.Fatalf("while nodes were replaced: %s", strings.Join(v, "; "))
	}
	// 2. Once the pod is gone, its node goes too.
	if err := e.Client.Delete(t.Context(), pinned); err != nil {
		t.Fatal(err)
	}
	watcher.stop()
	framework.Eventually(t, driftTimeout, func(ctx context.Context) (bool, string) {
		return rolled(ctx, e, name, original, newImages, 0, 3)
	})
	peak, seen := disrupting.Stop()
	if seen < len(original) || peak > 1 {
		t.Errorf("%d original nodes disrupted in all, at most %d at once; want %d, one at a time (budget 1)", seen, peak, len(original))
	}
}

// rolled reports whether, of the original NodeClaims, exactly left remain,
// the app's pods are Available and every other node's instance runs one of
// the new images.
func rolled(ctx context.Context, e *awsenv.Env, pool string, original, newImages map[string]bool, left, pods int) (bool, string) {
	remaining, fresh := 0, 0
	for _, nc := range framework.PoolNodeClaims(ctx, e.Client, pool) {
		if original[nc.Name] {
			remaining++
			continue
		}
		inst, ok := e.InstanceOf(nc.Status.ProviderID)
		if !ok {
			return false, fmt.Sprintf("NodeClaim %s not launched yet", nc.Name)
		}
		if !newImages[aws.ToString(inst.ImageId)] {
			return false, fmt.Sprintf("replacement %s runs image %s, not the new release", nc.Name, aws.ToString(inst.ImageId))
		}
		fresh++
	}
	available := len(framework.AvailablePods(ctx, e.Client, pool, map[string]string{"app": pool}))
	return remaining == left && available == pods,
		fmt.Sprintf("%d original NodeClaims left (want %d), %d replacements on the new image, %d of %d app pods available", remaining, left, fresh, available, pods)
}

// doNotDisruptPod is a pod karp must not evict, kept off the app's nodes.
func doNotDisruptPod(namespace string, app map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: namespace, Labels: map[string]string{"role": "pinned"},
			Annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: namespace},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: app}}}}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: test.ResourceList("cpu", "500m", "memory", "256Mi")}}},
		},
	}
}

// safetyWatcher samples every 200 ms that at least minAvailable of the
// app's pods are Available (the PodDisruptionBudget) and that the pinned
// pod is the same pod, running, not being deleted.
type safetyWatcher struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	found  []string
}

func watchSafety(t *testing.T, cl client.Client, namespace string, app map[string]string, minAvailable int, pinned *corev1.Pod) *safetyWatcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &safetyWatcher{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			var problems []string
			if pods := framework.AvailablePods(ctx, cl, namespace, app); pods != nil && len(pods) < minAvailable {
				problems = append(problems, fmt.Sprintf("%s: only %d app pods available, the PDB requires %d", time.Now().Format(time.TimeOnly), len(pods), minAvailable))
			}
			got := &corev1.Pod{}
			err := cl.Get(ctx, types.NamespacedName{Namespace: pinned.Namespace, Name: pinned.Name}, got)
			switch {
			case ctx.Err() != nil:
				return
			case client.IgnoreNotFound(err) != nil:
			case err != nil || got.UID != pinned.UID || got.DeletionTimestamp != nil || got.Spec.NodeName != pinned.Spec.NodeName:
				problems = append(problems, fmt.Sprintf("%s: the do-not-disrupt pod was evicted or moved (err %v)", time.Now().Format(time.TimeOnly), err))
			}
			w.mu.Lock()
			w.found = append(w.found, problems...)
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *safetyWatcher) stop() { w.cancel(); <-w.done }

func (w *safetyWatcher) violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.found)
}

// TestSelectorChangesDriftNodes moves an EC2NodeClass's subnet selector,
// then its security-group selector, to the alternate ones and checks each
// change replaces every node with instances in the new subnets, then with
// the new security group.
func TestSelectorChangesDriftNodes(t *testing.T) {
	const name = "e2e-selectors"
	e := awsenv.Start(t)
	e.SetUp(t, e.NodeClass(name), awsenv.NodePool(name).Budgets(karpv1.Budget{Nodes: "1"}).
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand))
	framework.Create(t, e.Client, framework.SpreadOverHosts(framework.Deployment(name, name, name, 2, "500m")))
	e.WaitAvailable(t, name, 2)
	alternate := map[string]string{"karp.sh/tier": "alternate"}

	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	framework.Mutate(t, e.Client, nc, func() { nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: alternate}} })
	framework.Eventually(t, driftTimeout, func(ctx context.Context) (bool, string) {
		return allInstances(ctx, e, name, 2, "in an alternate subnet", func(inst instanceView) bool {
			return strings.HasPrefix(inst.subnet, "subnet-alternate")
		})
	})

	framework.Mutate(t, e.Client, nc, func() {
		nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Tags: alternate}}
	})
	framework.Eventually(t, driftTimeout, func(ctx context.Context) (bool, string) {
		return allInstances(ctx, e, name, 2, "in the alternate security group only", func(inst instanceView) bool {
			return slices.Equal(inst.groups, []string{"sg-alternate"}) && strings.HasPrefix(inst.subnet, "subnet-alternate")
		})
	})
}

type instanceView struct {
	subnet string
	groups []string
}

// allInstances reports whether the pool's NodeClaims all run instances
// that satisfy ok and the pods are Available.
func allInstances(ctx context.Context, e *awsenv.Env, pool string, pods int, what string, ok func(instanceView) bool) (bool, string) {
	claims := framework.PoolNodeClaims(ctx, e.Client, pool)
	for _, nc := range claims {
		inst, found := e.InstanceOf(nc.Status.ProviderID)
		if !found {
			return false, fmt.Sprintf("NodeClaim %s not launched yet", nc.Name)
		}
		view := instanceView{subnet: aws.ToString(inst.SubnetId)}
		for _, g := range inst.SecurityGroups {
			view.groups = append(view.groups, aws.ToString(g.GroupId))
		}
		if !ok(view) {
			return false, fmt.Sprintf("NodeClaim %s: instance %s in %s with groups %v, want one %s", nc.Name, aws.ToString(inst.InstanceId), view.subnet, view.groups, what)
		}
	}
	available := len(framework.AvailablePods(ctx, e.Client, pool, nil))
	return len(claims) > 0 && available == pods, fmt.Sprintf("%d NodeClaims, %d of %d pods available", len(claims), available, pods)
}
