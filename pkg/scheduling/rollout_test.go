package scheduling

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
)

func int32p(v int32) *int32 { return &v }

func intOrStr(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

// TestDeploymentRollout resolves maxUnavailable as the Deployment
// controller does (percentages of spec.replicas rounded down), at least 1,
// with 25% for an unset value and for a Recreate Deployment.
func TestDeploymentRollout(t *testing.T) {
	tests := map[string]struct {
		replicas        *int32
		strategy        appsv1.DeploymentStrategy
		wantReplicas    int
		wantUnavailable int
	}{
		"default 25% of 4":               {replicas: int32p(4), wantReplicas: 4, wantUnavailable: 1},
		"default 25% of 10 rounds down":  {replicas: int32p(10), wantReplicas: 10, wantUnavailable: 2},
		"default 25% of 3 is at least 1": {replicas: int32p(3), wantReplicas: 3, wantUnavailable: 1},
		"unset replicas default to 1":    {wantReplicas: 1, wantUnavailable: 1},
		"an absolute number": {replicas: int32p(10), wantReplicas: 10, wantUnavailable: 3,
			strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: intOrStr("3")}}},
		"a percentage rounds down": {replicas: int32p(10), wantReplicas: 10, wantUnavailable: 3,
			strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: intOrStr("39%")}}},
		"zero (surge-only rollouts) is at least 1": {replicas: int32p(10), wantReplicas: 10, wantUnavailable: 1,
			strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: intOrStr("0")}}},
		"more than the replicas": {replicas: int32p(2), wantReplicas: 2, wantUnavailable: 5,
			strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: intOrStr("5")}}},
		"Recreate gets 25%": {replicas: int32p(8), wantReplicas: 8, wantUnavailable: 2,
			strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
		"an invalid value counts as 1": {replicas: int32p(8), wantReplicas: 8, wantUnavailable: 1,
			strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: intOrStr("many%")}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "d"},
				Spec: appsv1.DeploymentSpec{Replicas: tc.replicas, Strategy: tc.strategy}}
			want := RolloutController{Kind: "Deployment", Namespace: "ns", Name: "web", UID: "d", Replicas: tc.wantReplicas,
				MaxUnavailable: tc.wantUnavailable}
			if diff := cmp.Diff(want, DeploymentRollout(d)); diff != "" {
				t.Errorf("rollout (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestStatefulSetAndReplicaSetRollout: a StatefulSet resolves its
// maxUnavailable (default 1) rounding percentages up, as the StatefulSet
// API documents, at least 1; a bare ReplicaSet gets 25% of its replicas
// rounded down, at least 1.
func TestStatefulSetAndReplicaSetRollout(t *testing.T) {
	sts := func(replicas int32, mu *intstr.IntOrString) *appsv1.StatefulSet {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Spec: appsv1.StatefulSetSpec{Replicas: &replicas}}
		if mu != nil {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{MaxUnavailable: mu}
		}
		return s
	}
	rs := func(replicas int32) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"}, Spec: appsv1.ReplicaSetSpec{Replicas: &replicas}}
	}
	tests := map[string]struct {
		got  RolloutController
		want int
	}{
		"StatefulSet default 1":                   {StatefulSetRollout(sts(10, nil)), 1},
		"StatefulSet OnDelete (no rollingUpdate)": {StatefulSetRollout(&appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: int32p(5), UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}}}), 1},
		"StatefulSet absolute":                    {StatefulSetRollout(sts(10, intOrStr("4"))), 4},
		"StatefulSet percentage rounds up":        {StatefulSetRollout(sts(10, intOrStr("25%"))), 3},
		"StatefulSet small percentage is 1":       {StatefulSetRollout(sts(3, intOrStr("10%"))), 1},
		"ReplicaSet 25% of 8":                     {ReplicaSetRollout(rs(8)), 2},
		"ReplicaSet 25% of 7 rounds down":         {ReplicaSetRollout(rs(7)), 1},
		"ReplicaSet of 1 is 1":                    {ReplicaSetRollout(rs(1)), 1},
		"ReplicaSet scaled to zero is still 1":    {ReplicaSetRollout(rs(0)), 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.got.MaxUnavailable != tc.want {
				t.Errorf("maxUnavailable = %d, want %d", tc.got.MaxUnavailable, tc.want)
			}
		})
	}
}

// rolloutPod is a pod of the budget tests: ready or not, terminating or not.
func rolloutPod(uid string, ready, terminating bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if terminating {
		p.DeletionTimestamp = &metav1.Time{}
	}
	return p
}

// TestRolloutBudget counts unavailable replicas as spec.replicas minus the
// pods that are Ready and not terminating (so a terminating pod and its
// not-yet-Ready replacement are one missing replica, and surge pods make
// up for unavailable ones), and admits an available pod only while the
// budget has room, a pod that is not available always.
func TestRolloutBudget(t *testing.T) {
	ready := func(uid string) *corev1.Pod { return rolloutPod(uid, true, false) }
	notReady := func(uid string) *corev1.Pod { return rolloutPod(uid, false, false) }
	terminating := func(uid string) *corev1.Pod { return rolloutPod(uid, true, true) }
	ctrl := RolloutController{Kind: "Deployment", Namespace: "ns", Name: "web", Replicas: 4, MaxUnavailable: 1}
	tests := map[string]struct {
		pods     []*corev1.Pod
		evicting sets.Set[types.UID]
		// wantUnavailable, and whether the first pod is admitted.
		wantUnavailable int
		wantAdmitsFirst bool
	}{
		"all ready: one may go":                   {pods: []*corev1.Pod{ready("a"), ready("b"), ready("c"), ready("d")}, wantAdmitsFirst: true},
		"one not ready: no ready pod may go":      {pods: []*corev1.Pod{ready("a"), ready("b"), ready("c"), notReady("d")}, wantUnavailable: 1},
		"the not-ready pod itself may go":         {pods: []*corev1.Pod{notReady("d"), ready("a"), ready("b"), ready("c")}, wantUnavailable: 1, wantAdmitsFirst: true},
		"a missing replica counts":                {pods: []*corev1.Pod{ready("a"), ready("b"), ready("c")}, wantUnavailable: 1},
		"terminating plus its replacement is one": {pods: []*corev1.Pod{ready("a"), ready("b"), ready("c"), terminating("d"), notReady("e")}, wantUnavailable: 1},
		"a terminating pod may go again":          {pods: []*corev1.Pod{terminating("d"), ready("a"), ready("b")}, wantUnavailable: 2, wantAdmitsFirst: true},
		"a pod being evicted counts":              {pods: []*corev1.Pod{ready("a"), ready("b"), ready("c"), ready("d")}, evicting: sets.New[types.UID]("d"), wantUnavailable: 1},
		"surge pods make up for unready ones":     {pods: []*corev1.Pod{ready("a"), ready("b"), ready("c"), ready("d"), notReady("e")}, wantAdmitsFirst: true},
		"two unavailable exceed the budget":       {pods: []*corev1.Pod{ready("a"), ready("b"), notReady("c"), notReady("d")}, wantUnavailable: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := NewRolloutBudget(ctrl, tc.pods, tc.evicting)
			if b.Unavailable != tc.wantUnavailable {
				t.Errorf("unavailable = %d, want %d", b.Unavailable, tc.wantUnavailable)
			}
			if got := b.Admits(tc.pods[0]); got != tc.wantAdmitsFirst {
				t.Errorf("admits %s = %v, want %v (%s)", tc.pods[0].Name, got, tc.wantAdmitsFirst, b)
			}
			if want := max(0, 1-tc.wantUnavailable); b.Allowed() != want {
				t.Errorf("allowed = %d, want %d", b.Allowed(), want)
			}
		})
	}
}

func TestRolloutBudgetString(t *testing.T) {
	b := NewRolloutBudget(RolloutController{Kind: "StatefulSet", Namespace: "ns", Name: "db", Replicas: 3, MaxUnavailable: 1},
		[]*corev1.Pod{rolloutPod("a", true, false), rolloutPod("b", false, false)}, nil)
	if got, want := b.String(), "StatefulSet ns/db has 2 of 3 replicas unavailable (maxUnavailable 1)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
