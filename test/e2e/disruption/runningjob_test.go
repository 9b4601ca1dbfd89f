package disruption

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// job is a one-pod Job of a pause container requesting 500m, kept to the
// pool, whose pod runs for runFor before kwok completes it.
func job(name, pool string, runFor time.Duration) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pool},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](6),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"job": name},
					Annotations: map[string]string{localcluster.KWOKPodCompleteDelayAnnotationKey: runFor.String()}},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: pool},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{Name: "work", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: test.ResourceList("cpu", "500m", "memory", "256Mi")}}},
				},
			},
		},
	}
}

// jobPodNode is the node the Job's running pod is on, "" when none runs.
func jobPodNode(ctx context.Context, t *testing.T, f *framework.Framework, namespace, name string) string {
	var pods corev1.PodList
	if err := f.Client.List(ctx, &pods, &client.ListOptions{Namespace: namespace}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Labels["job"] == name && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return p.Spec.NodeName
		}
	}
	return ""
}

// TestRunningJobKeepsItsNodeUntilItEnds: a node left holding only a
// running Job's pod (on a 4-vCPU node that a 2-vCPU one would replace) is
// not consolidated while the pod runs, and says so (DisruptionBlocked
// RunningJob); once the pod completes the empty node is consolidated. In a
// pool whose nodes expire, a running Job's pod does not keep its node past
// expireAfter: expiry is forceful.
func TestRunningJobKeepsItsNodeUntilItEnds(t *testing.T) {
	t.Run("consolidation", func(t *testing.T) {
		const name = "e2e-running-job"
		pool := test.MakeNodePool(name).
			Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
			Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "c5.large", "c5.xlarge").
			ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized).
			ConsolidateAfter(karpv1.MustParseNillableDuration("5s")).
			Obj()
		f, _ := framework.RunPool(t, name, pool, framework.FastDisruptionArgs...)
		cl := f.Client
		framework.Create(t, cl, framework.Deployment("big", name, name, 1, "3"))
		claims := framework.WaitRunningClaims(t, cl, name, 1)
		var claim string
		for n := range claims {
			claim = n
		}
		const runFor = 50 * time.Second
		framework.Create(t, cl, job("report", name, runFor))
		var node string
		framework.Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
			node = jobPodNode(ctx, t, f, name, "report")
			return node != "", "the Job's pod is not running yet"
		})
		if want := framework.PoolNodeClaimsByName(t.Context(), cl, name)[claim].Status.NodeName; node != want {
			t.Fatalf("the Job's pod runs on %s, want the big pod's node %s", node, want)
		}
		started := time.Now()
		// The big pod goes: the node holds only the running Job's pod.
		big := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: name}}
		framework.Mutate(t, cl, big, func() { big.Spec.Replicas = new(int32) })

		framework.Eventually(t, runFor, func(ctx context.Context) (bool, string) {
			nc := framework.PoolNodeClaimsByName(ctx, cl, name)[claim]
			c := nc.StatusConditions().Get(disruption.ConditionTypeDisruptionBlocked)
			return c != nil && c.Reason == disruption.BlockedRunningJob, fmt.Sprintf("DisruptionBlocked %+v", c)
		})
		for time.Since(started) < runFor-10*time.Second {
			nc, ok := framework.PoolNodeClaimsByName(t.Context(), cl, name)[claim]
			if !ok || nc.DeletionTimestamp != nil {
				t.Fatalf("node %s disrupted %s after the Job's pod started, while it runs (for %s)", node, time.Since(started).Round(time.Second), runFor)
			}
			if len(framework.PoolNodeClaims(t.Context(), cl, name)) != 1 {
				t.Fatalf("a replacement was launched while the Job's pod runs:\n%s", framework.Describe(t.Context(), cl, name))
			}
			time.Sleep(time.Second)
		}
		framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
			_, ok := framework.PoolNodeClaimsByName(ctx, cl, name)[claim]
			return !ok, fmt.Sprintf("node %s still there after the Job's pod ended", node)
		})
	})

	t.Run("expiry", func(t *testing.T) {
		const name = "e2e-running-job-expiry"
		const expireAfter = 45 * time.Second
		pool := test.MakeNodePool(name).
			Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).
			ExpireAfter(karpv1.NewNillableDuration(expireAfter)).
			ConsolidationPolicy(karpv1.ConsolidationPolicyWhenEmpty).
			ConsolidateAfter(karpv1.MustParseNillableDuration(karpv1.Never)).
			Obj()
		f, _ := framework.RunPool(t, name, pool, framework.FastDisruptionArgs...)
		cl := f.Client
		framework.Create(t, cl, job("report", name, 10*time.Minute))
		var node string
		framework.Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
			node = jobPodNode(ctx, t, f, name, "report")
			return node != "", "the Job's pod is not running yet"
		})
		nc := framework.NodeClaimOfNode(t, cl, node)
		expiry := nc.CreationTimestamp.Add(expireAfter)
		framework.Eventually(t, time.Until(expiry)+2*time.Minute, func(ctx context.Context) (bool, string) {
			_, ok := framework.PoolNodeClaimsByName(ctx, cl, name)[nc.Name]
			now := jobPodNode(ctx, t, f, name, "report")
			return !ok && now != "" && now != node, fmt.Sprintf("expired NodeClaim %s still there %v; the Job's pod runs on %q", nc.Name, ok, now)
		})
	})
}
