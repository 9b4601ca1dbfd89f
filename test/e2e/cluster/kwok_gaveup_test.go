package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/localcluster"
	"github.com/karp-autoscaler/karp/test/e2e/framework"
)

// kwok gives up on a stage whose write the API server refuses with an
// error it does not take for transient (a 500 from an API server whose
// etcd is restarting, in the run that found this), and acts again only on
// the object's next change. The local cluster's resync gives it that
// change, as a kubelet's periodic sync would. The test makes the API
// server refuse kwok's write with an admission policy, lifts the policy
// once kwok has given up, and waits for the pod to run.
func TestKWOKResyncRunsAPodKWOKGaveUpOn(t *testing.T) {
	const name = "kwok-gave-up"
	const label = "karp.sh/test-refuse-running"
	f := framework.Current(t)
	cl := f.Client
	ctx := t.Context()
	cleanup := context.WithoutCancel(ctx)

	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/status"}},
				},
			}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name: "labelled", Expression: fmt.Sprintf("has(object.metadata.labels) && %q in object.metadata.labels", label),
			}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "object.status.phase != 'Running'", Message: "refused by the test: this pod may not run yet",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name, ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	framework.Create(t, cl, policy)
	t.Cleanup(func() { _ = cl.Delete(cleanup, policy) })
	framework.Create(t, cl, binding)
	t.Cleanup(func() { _ = cl.Delete(cleanup, binding) })

	// The policy is enforced once a dry-run status write like kwok's is
	// refused, on a pod nothing else touches (it has a scheduling gate).
	probe := framework.MakePodOn("default", name+"-probe", name)
	probe.Labels = map[string]string{label: "true"}
	probe.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: label}}
	framework.Create(t, cl, probe)
	t.Cleanup(func() { _ = cl.Delete(cleanup, probe) })
	framework.Eventually(t, time.Minute, func(ctx context.Context) (bool, string) {
		got := &corev1.Pod{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(probe), got); err != nil {
			return false, err.Error()
		}
		got.Status.Phase = corev1.PodRunning
		err := cl.Status().Update(ctx, got, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "refused by the test"), fmt.Sprintf("dry-run status write: %v", err)
	})

	node := framework.MakeKWOKNode(name)
	framework.Create(t, cl, node)
	t.Cleanup(func() { _ = cl.Delete(cleanup, node) })
	pod := framework.MakePodOn("default", name+"-pod", name)
	pod.Labels = map[string]string{label: "true"}
	framework.Create(t, cl, pod)
	t.Cleanup(func() { _ = cl.Delete(cleanup, pod) })

	// kwok tries to run the pod, is refused, and gives up.
	kwokLog := filepath.Join(f.Cluster.Dir, "logs", localcluster.KWOK+".log")
	framework.Eventually(t, 2*time.Minute, func(context.Context) (bool, string) {
		out, err := os.ReadFile(kwokLog)
		if err != nil {
			return false, err.Error()
		}
		for line := range strings.Lines(string(out)) {
			if strings.Contains(line, "failed to apply stage") && strings.Contains(line, pod.Name) && strings.Contains(line, "refused by the test") {
				return true, ""
			}
		}
		return false, "waiting for kwok to report the refused write for " + pod.Name
	})
	if err := cl.Delete(ctx, binding); err != nil {
		t.Fatalf("lifting the policy: %v", err)
	}

	// Nothing changes the pod after kwok gave up; only the resync's touch
	// makes kwok try again.
	framework.Eventually(t, 2*time.Minute, func(ctx context.Context) (bool, string) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return false, err.Error()
		}
		return framework.PodRunning(pod), fmt.Sprintf("pod on %q phase %q conditions %v annotations %v",
			pod.Spec.NodeName, pod.Status.Phase, pod.Status.Conditions, pod.Annotations)
	})
	if pod.Annotations[localcluster.KWOKResyncAnnotationKey] == "" {
		t.Errorf("the pod runs without the resync's %s annotation: something else made kwok act", localcluster.KWOKResyncAnnotationKey)
	}
}
