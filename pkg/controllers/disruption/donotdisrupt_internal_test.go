package disruption

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// TestCandidatesProtectAPodNotYetStarted checks candidate filtering uses
// the one do-not-disrupt rule (scheduling.DoNotDisruptActive): a duration
// counts from the pod's start, so a pod created long ago that has no start
// time yet is still protected.
func TestCandidatesProtectAPodNotYetStarted(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	sn := pureStateNode("n", "default", stateNodeOpts{})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default",
		CreationTimestamp: metav1.NewTime(now.Add(-2 * time.Hour)),
		Annotations:       map[string]string{karpv1.DoNotDisruptAnnotationKey: "30m"},
		OwnerReferences:   []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending}}
	sn.Pods = []*corev1.Pod{pod}
	w := pureWorld(now, []*karpv1.NodePool{poolWithBudgets("default")}, sn)
	w.poolCost, w.poolDisruption = map[string]float64{}, map[string]float64{}
	if cand := (&Controller{}).newCandidate(t.Context(), w, sn, newPDBIndex(nil), nil); cand != nil {
		t.Fatal("node with a do-not-disrupt pod that has not started is a candidate")
	}
	if got := w.blocked["n"]; got.reason != BlockedDoNotDisrupt {
		t.Errorf("blocked = %+v, want reason %s", got, BlockedDoNotDisrupt)
	}
}
