package rollout

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// +kubebuilder:rbac:groups=apps,resources=deployments;replicasets;statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch

// groupedAfter is how many controllers of one namespace a View looks up
// with label-selected lists before it lists the namespace's pods once and
// groups them by controller: one drain eviction asks for one controller,
// a consolidation pass for every controller on the candidates.
const groupedAfter = 2

// View reads rollout budgets for one decision: each controller, and each
// namespace's ReplicaSets, is read once. It reads cached objects without
// copying them and never writes them. A View is not safe for concurrent
// use; make one per decision, so budgets reflect the cache at that time.
type View struct {
	kubeClient client.Reader
	evicting   sets.Set[types.UID]
	// budgets are by the UID of the pod's controller reference (a
	// ReplicaSet or StatefulSet) and of the Deployment; nil: none applies.
	budgets map[types.UID]*scheduling.RolloutBudget
	// deploymentRS are, per namespace, the ReplicaSet UIDs by the UID of
	// the Deployment controlling them.
	deploymentRS map[string]map[types.UID][]types.UID
	// lookups counts the controllers read per namespace; podsByOwner
	// groups a namespace's pods by controller UID once lookups pass
	// groupedAfter.
	lookups     map[string]int
	podsByOwner map[string]map[types.UID][]*corev1.Pod
}

// NewView returns a View over kubeClient (the manager's cache). evicting
// are pods whose eviction was just granted: they count as unavailable
// whatever the cache still says about them.
func NewView(kubeClient client.Reader, evicting sets.Set[types.UID]) *View {
	return &View{kubeClient: kubeClient, evicting: evicting, budgets: map[types.UID]*scheduling.RolloutBudget{},
		deploymentRS: map[string]map[types.UID][]types.UID{}, lookups: map[string]int{},
		podsByOwner: map[string]map[types.UID][]*corev1.Pod{}}
}

// Budget returns the rollout budget that governs evicting the pod, or nil
// when none does: the pod's controller is not a ReplicaSet or StatefulSet,
// or it is gone, being deleted, or not the object the pod's reference names
// (a newer one of the same name). A ReplicaSet whose Deployment is gone
// counts on its own. Whether a PodDisruptionBudget takes precedence is the
// caller's to decide (CoveredByPDB).
func (v *View) Budget(ctx context.Context, pod *corev1.Pod) (*scheduling.RolloutBudget, error) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || !isApps(ref.APIVersion) || (ref.Kind != "ReplicaSet" && ref.Kind != "StatefulSet") {
		return nil, nil
	}
	if b, ok := v.budgets[ref.UID]; ok {
		return b, nil
	}
	var b *scheduling.RolloutBudget
	var err error
	if ref.Kind == "ReplicaSet" {
		b, err = v.replicaSetBudget(ctx, pod.Namespace, ref)
	} else {
		b, err = v.statefulSetBudget(ctx, pod.Namespace, ref)
	}
	if err != nil {
		return nil, err
	}
	v.budgets[ref.UID] = b
	return b, nil
}

func (v *View) replicaSetBudget(ctx context.Context, namespace string, ref *metav1.OwnerReference) (*scheduling.RolloutBudget, error) {
	rs := &appsv1.ReplicaSet{}
	if ok, err := v.get(ctx, namespace, ref, rs); !ok || err != nil {
		return nil, err
	}
	if owner := metav1.GetControllerOfNoCopy(rs); owner != nil && owner.Kind == "Deployment" && isApps(owner.APIVersion) {
		if b, ok := v.budgets[owner.UID]; ok {
			return b, nil
		}
		d := &appsv1.Deployment{}
		ok, err := v.get(ctx, namespace, owner, d)
		if err != nil {
			return nil, err
		}
		if ok {
			b, err := v.deploymentBudget(ctx, d)
			if err != nil {
				return nil, err
			}
			v.budgets[d.UID] = b
			return b, nil
		}
		// The Deployment is gone (the ReplicaSet was orphaned, or is
		// about to be collected): the ReplicaSet counts on its own.
	}
	pods, err := v.podsOf(ctx, namespace, rs.Spec.Selector, rs.UID)
	if err != nil {
		return nil, err
	}
	return scheduling.NewRolloutBudget(scheduling.ReplicaSetRollout(rs), pods, v.evicting), nil
}

func (v *View) deploymentBudget(ctx context.Context, d *appsv1.Deployment) (*scheduling.RolloutBudget, error) {
	rsUIDs, err := v.replicaSetsOf(ctx, d)
	if err != nil {
		return nil, err
	}
	pods, err := v.podsOf(ctx, d.Namespace, d.Spec.Selector, rsUIDs...)
	if err != nil {
		return nil, err
	}
	return scheduling.NewRolloutBudget(scheduling.DeploymentRollout(d), pods, v.evicting), nil
}

func (v *View) statefulSetBudget(ctx context.Context, namespace string, ref *metav1.OwnerReference) (*scheduling.RolloutBudget, error) {
	s := &appsv1.StatefulSet{}
	if ok, err := v.get(ctx, namespace, ref, s); !ok || err != nil {
		return nil, err
	}
	pods, err := v.podsOf(ctx, namespace, s.Spec.Selector, s.UID)
	if err != nil {
		return nil, err
	}
	return scheduling.NewRolloutBudget(scheduling.StatefulSetRollout(s), pods, v.evicting), nil
}

// get reads the object ref names into obj; it reports false when the
// object is gone, being deleted, or another object of that name.
func (v *View) get(ctx context.Context, namespace string, ref *metav1.OwnerReference, obj client.Object) (bool, error) {
	err := v.kubeClient.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, obj, client.UnsafeDisableDeepCopy)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("getting %s %s/%s: %w", ref.Kind, namespace, ref.Name, err)
	}
	return obj.GetUID() == ref.UID && obj.GetDeletionTimestamp() == nil, nil
}

// replicaSetsOf returns the UIDs of the Deployment's ReplicaSets (those it
// controls, whatever their revision).
func (v *View) replicaSetsOf(ctx context.Context, d *appsv1.Deployment) ([]types.UID, error) {
	byDeployment, ok := v.deploymentRS[d.Namespace]
	if !ok {
		var list appsv1.ReplicaSetList
		if err := v.kubeClient.List(ctx, &list, client.InNamespace(d.Namespace), client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing replicasets in %s: %w", d.Namespace, err)
		}
		byDeployment = map[types.UID][]types.UID{}
		for i := range list.Items {
			if owner := metav1.GetControllerOfNoCopy(&list.Items[i]); owner != nil {
				byDeployment[owner.UID] = append(byDeployment[owner.UID], list.Items[i].UID)
			}
		}
		v.deploymentRS[d.Namespace] = byDeployment
	}
	return byDeployment[d.UID], nil
}

// podsOf returns the namespace's pods whose controller is one of owners.
// The first controllers of a namespace are read with their label
// selector; past groupedAfter, the namespace's pods are listed once and
// grouped by controller.
func (v *View) podsOf(ctx context.Context, namespace string, selector *metav1.LabelSelector, owners ...types.UID) ([]*corev1.Pod, error) {
	v.lookups[namespace]++
	if grouped, ok := v.podsByOwner[namespace]; ok || v.lookups[namespace] > groupedAfter {
		if !ok {
			var err error
			if grouped, err = v.groupPods(ctx, namespace); err != nil {
				return nil, err
			}
		}
		var out []*corev1.Pod
		for _, uid := range owners {
			out = append(out, grouped[uid]...)
		}
		return out, nil
	}
	opts := []client.ListOption{client.InNamespace(namespace), client.UnsafeDisableDeepCopy}
	if sel, err := metav1.LabelSelectorAsSelector(selector); err == nil && selector != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	var list corev1.PodList
	if err := v.kubeClient.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("listing pods in %s: %w", namespace, err)
	}
	want := sets.New(owners...)
	var out []*corev1.Pod
	for i := range list.Items {
		if ref := metav1.GetControllerOfNoCopy(&list.Items[i]); ref != nil && want.Has(ref.UID) {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

func (v *View) groupPods(ctx context.Context, namespace string) (map[types.UID][]*corev1.Pod, error) {
	var list corev1.PodList
	if err := v.kubeClient.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing pods in %s: %w", namespace, err)
	}
	grouped := map[types.UID][]*corev1.Pod{}
	for i := range list.Items {
		if ref := metav1.GetControllerOfNoCopy(&list.Items[i]); ref != nil {
			grouped[ref.UID] = append(grouped[ref.UID], &list.Items[i])
		}
	}
	v.podsByOwner[namespace] = grouped
	return grouped, nil
}

// CoveredByPDB reports whether a PodDisruptionBudget of the pod's
// namespace selects it (an empty selector selects every pod, a missing one
// none, as the Eviction API reads them). Such a pod follows its PDB only.
func CoveredByPDB(ctx context.Context, kubeClient client.Reader, pod *corev1.Pod) (bool, error) {
	var list policyv1.PodDisruptionBudgetList
	if err := kubeClient.List(ctx, &list, client.InNamespace(pod.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing poddisruptionbudgets in %s: %w", pod.Namespace, err)
	}
	for i := range list.Items {
		if PDBSelects(&list.Items[i], pod) {
			return true, nil
		}
	}
	return false, nil
}

// PDBSelects reports whether the PDB selects the pod.
func PDBSelects(pdb *policyv1.PodDisruptionBudget, pod *corev1.Pod) bool {
	if pdb.Spec.Selector == nil || pdb.Namespace != pod.Namespace {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	return err == nil && sel.Matches(labels.Set(pod.Labels))
}

func isApps(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == appsv1.GroupName
}
