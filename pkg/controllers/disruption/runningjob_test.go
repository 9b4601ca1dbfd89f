package disruption_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/controllers/disruption"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// jobPod is a pod of the Job "report" (as the Job controller makes it:
// its controller reference is the batch/v1 Job).
func jobPod(name, cpu string) *corev1.Pod {
	p := test.MakePod(name).Namespace("default").Requests("cpu", cpu).Obj()
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "report", UID: "job-uid",
		Controller: new(true), BlockOwnerDeletion: new(true)}}
	return p
}

// A Running pod of a Job keeps its node from consolidation and from drift
// (without a terminationGracePeriod), as karpenter.sh/do-not-disrupt:
// "true" would, and the node says why. The pod opts out with
// do-not-disrupt "false", a pod that has ended protects nothing, and
// --protect-running-jobs=false turns the rule off.
func TestRunningJobKeepsItsNode(t *testing.T) {
	cases := map[string]struct {
		node     string // unique per case: an earlier case's node may still be going
		opts     nodeOpts
		pod      func() *corev1.Pod
		ended    bool // the pod Succeeded after it ran
		off      bool // --protect-running-jobs=false
		wantKept bool
	}{
		"consolidation of a node running a Job's pod": {node: "job-consolidate",
			opts: nodeOpts{it: largeType}, pod: func() *corev1.Pod { return jobPod("j1", "1") }, wantKept: true},
		"drift of a node running a Job's pod": {node: "job-drift",
			opts: nodeOpts{it: smallType, conditions: []string{karpv1.ConditionTypeDrifted}}, pod: func() *corev1.Pod { return jobPod("j1", "1500m") }, wantKept: true},
		"the pod opted out with do-not-disrupt false": {node: "job-optout",
			opts: nodeOpts{it: largeType}, pod: func() *corev1.Pod {
				p := jobPod("j1", "1")
				p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "false"}
				return p
			}},
		"the Job's pod has ended": {node: "job-ended",
			opts: nodeOpts{it: largeType}, pod: func() *corev1.Pod { return jobPod("j1", "1") }, ended: true},
		"protection turned off": {node: "job-off",
			opts: nodeOpts{it: largeType}, pod: func() *corev1.Pod { return jobPod("j1", "1") }, off: true},
		"a ReplicaSet's pod is not protected": {node: "rs-pod",
			opts: nodeOpts{it: largeType}, pod: func() *corev1.Pod { return pod("p1", "1") }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			if tc.off {
				h.opts.ProtectRunningJobs = false
				h.newController()
			}
			h.readyNodePool(test.MakeNodePool("default").Budgets(karpv1.Budget{Nodes: "100%"}).Obj())
			p := tc.pod()
			h.runningNode(tc.node, tc.opts, p)
			if tc.ended {
				p.Status.Phase = corev1.PodSucceeded
				if err := h.client.Status().Update(h.ctx, p); err != nil {
					t.Fatal(err)
				}
				h.eventually("the ended pod in state", func() bool {
					for _, sn := range h.cluster.Nodes() {
						if sn.Name() == tc.node {
							for _, sp := range sn.Pods {
								if sp.Name == p.Name && sp.Status.Phase == corev1.PodSucceeded {
									return true
								}
							}
							return len(sn.Pods) == 0
						}
					}
					return false
				})
			}
			h.decide()
			disrupted := h.gone(tc.node) || h.tainted(tc.node) || len(h.replacements(tc.node)) > 0
			if disrupted == tc.wantKept {
				t.Fatalf("disrupted = %v, want %v (DisruptionBlocked = %+v)", disrupted, !tc.wantKept, h.blocked(tc.node))
			}
			c := h.blocked(tc.node)
			if tc.wantKept {
				if c == nil || c.Reason != disruption.BlockedRunningJob || !strings.Contains(c.Message, "default/j1 of Job report is running") {
					t.Fatalf("DisruptionBlocked = %+v, want reason %s naming the pod and its Job", c, disruption.BlockedRunningJob)
				}
			} else if c != nil && c.Reason == disruption.BlockedRunningJob {
				t.Fatalf("DisruptionBlocked = %+v, but the node was disrupted", c)
			}
		})
	}
}
