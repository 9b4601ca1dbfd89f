package scheduling

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
)

// defaultRolloutMaxUnavailable is the Deployment default (25%), which karp
// also applies to a ReplicaSet without a Deployment and to a Deployment
// whose strategy is Recreate (it has no rolling-update budget of its own).
var defaultRolloutMaxUnavailable = intstr.FromString("25%")

// RolloutController names the controller whose rollout budget governs a
// pod: a Deployment (for the pods of all its ReplicaSets), a ReplicaSet
// that no Deployment controls, or a StatefulSet.
type RolloutController struct {
	Kind      string
	Namespace string
	Name      string
	UID       types.UID
	// Replicas is the controller's spec.replicas.
	Replicas int
	// MaxUnavailable is the controller's budget resolved against Replicas
	// (at least 1).
	MaxUnavailable int
}

// DeploymentRollout is the rollout budget of a Deployment:
// spec.strategy.rollingUpdate.maxUnavailable (default 25%) resolved
// against spec.replicas rounding down, as the Deployment controller
// resolves it, and at least 1; a Recreate Deployment gets 25%, at least 1.
func DeploymentRollout(d *appsv1.Deployment) RolloutController {
	replicas := replicasOf(d.Spec.Replicas)
	maxUnavailable := &defaultRolloutMaxUnavailable
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType && d.Spec.Strategy.RollingUpdate != nil &&
		d.Spec.Strategy.RollingUpdate.MaxUnavailable != nil {
		maxUnavailable = d.Spec.Strategy.RollingUpdate.MaxUnavailable
	}
	return RolloutController{Kind: "Deployment", Namespace: d.Namespace, Name: d.Name, UID: d.UID, Replicas: replicas,
		MaxUnavailable: resolveMaxUnavailable(maxUnavailable, replicas, false)}
}

// ReplicaSetRollout is the rollout budget of a ReplicaSet that no
// Deployment controls: 25% of spec.replicas rounding down, at least 1.
func ReplicaSetRollout(rs *appsv1.ReplicaSet) RolloutController {
	replicas := replicasOf(rs.Spec.Replicas)
	return RolloutController{Kind: "ReplicaSet", Namespace: rs.Namespace, Name: rs.Name, UID: rs.UID, Replicas: replicas,
		MaxUnavailable: resolveMaxUnavailable(&defaultRolloutMaxUnavailable, replicas, false)}
}

// StatefulSetRollout is the rollout budget of a StatefulSet:
// spec.updateStrategy.rollingUpdate.maxUnavailable (default 1) resolved
// against spec.replicas rounding up, as the StatefulSet API documents it,
// and at least 1.
func StatefulSetRollout(s *appsv1.StatefulSet) RolloutController {
	replicas := replicasOf(s.Spec.Replicas)
	maxUnavailable := intstr.FromInt32(1)
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		maxUnavailable = *ru.MaxUnavailable
	}
	return RolloutController{Kind: "StatefulSet", Namespace: s.Namespace, Name: s.Name, UID: s.UID, Replicas: replicas,
		MaxUnavailable: resolveMaxUnavailable(&maxUnavailable, replicas, true)}
}

func replicasOf(replicas *int32) int {
	if replicas == nil {
		return 1 // the API server's default
	}
	return max(0, int(*replicas))
}

// resolveMaxUnavailable scales v against replicas, at least 1 (a value
// the API server would have refused counts as 1).
func resolveMaxUnavailable(v *intstr.IntOrString, replicas int, roundUp bool) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(v, replicas, roundUp)
	if err != nil {
		return 1
	}
	return max(1, n)
}

// RolloutBudget is a controller's rollout budget now: how many of its
// replicas are unavailable against how many may be.
//
// Unavailable is spec.replicas minus the controller's available pods (Ready
// and not terminating), never below 0: it counts the pods that are not
// Ready, and the replicas that have no pod or only a terminating one (a
// terminating pod and its replacement that is not Ready yet are one missing
// replica, not two; surplus pods of a rollout's surge make up for
// unavailable ones, as they do for the Deployment controller and for a
// PodDisruptionBudget's disruptionsAllowed).
type RolloutBudget struct {
	RolloutController
	// Available are the UIDs of the controller's available pods.
	Available   sets.Set[types.UID]
	Unavailable int
}

// NewRolloutBudget counts the controller's pods. pods are the controller's
// own (for a Deployment, those of all its ReplicaSets); evicting are pods
// whose eviction was just granted and which count as unavailable whatever
// they still look like.
func NewRolloutBudget(c RolloutController, pods []*corev1.Pod, evicting sets.Set[types.UID]) *RolloutBudget {
	b := &RolloutBudget{RolloutController: c, Available: sets.New[types.UID]()}
	for _, pod := range pods {
		if pod.DeletionTimestamp == nil && podIsReady(pod) && !evicting.Has(pod.UID) {
			b.Available.Insert(pod.UID)
		}
	}
	b.Unavailable = max(0, c.Replicas-b.Available.Len())
	return b
}

// Allowed is how many more available pods may become unavailable now.
func (b *RolloutBudget) Allowed() int { return max(0, b.MaxUnavailable-b.Unavailable) }

// Admits reports whether the pod may be evicted now: a pod that is not
// available may always go (its eviction makes nothing unavailable that is
// not already), an available one only while the budget has room.
func (b *RolloutBudget) Admits(pod *corev1.Pod) bool {
	return !b.Available.Has(pod.UID) || b.Allowed() > 0
}

// String names the controller and its budget, for events and conditions:
// "Deployment default/web has 1 of 4 replicas unavailable (maxUnavailable 1)".
func (b *RolloutBudget) String() string {
	return fmt.Sprintf("%s %s/%s has %d of %d replicas unavailable (maxUnavailable %d)",
		b.Kind, b.Namespace, b.Name, b.Unavailable, b.Replicas, b.MaxUnavailable)
}

func podIsReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
