package solverinput

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

// The owner kinds kube-scheduler deduces a default selector from.
var (
	replicationControllerKind = corev1.SchemeGroupVersion.WithKind("ReplicationController")
	replicaSetKind            = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	statefulSetKind           = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// +kubebuilder:rbac:groups="",resources=services;replicationcontrollers,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=replicasets;statefulsets,verbs=get;list;watch

// DefaultSpread returns, for each pod the defaults apply to (no constraints of
// its own, a profile with defaults, a selector deduced), its default
// constraints with that selector, keyed by pod UID. It reads each
// namespace's Services and each owner once. A lookup that fails is logged
// (debug) and the selector deduced without it, as kube-scheduler does: a
// deleted owner must not stop provisioning. The pods of one workload share
// one slice of constraints, which callers must not change.
func DefaultSpread(ctx context.Context, kubeClient client.Reader, defaults scheduling.SpreadDefaults, pods []*corev1.Pod) map[types.UID][]corev1.TopologySpreadConstraint {
	if len(defaults) == 0 {
		return nil
	}
	g := &gatherer{kubeClient: kubeClient, services: map[string][]*corev1.Service{}, owners: map[types.UID]*metav1.LabelSelector{}}
	out := map[types.UID][]corev1.TopologySpreadConstraint{}
	// The pods of one workload share their labels, owner and defaults:
	// their constraints are deduced once.
	memo := map[string][]corev1.TopologySpreadConstraint{}
	for _, pod := range pods {
		constraints := defaults.For(pod)
		if len(constraints) == 0 {
			continue
		}
		key := memoKey(pod)
		tscs, ok := memo[key]
		if !ok {
			selector := scheduling.DefaultSpreadSelector(pod, g.servicesOf(ctx, pod.Namespace), g.ownerSelector(ctx, pod))
			tscs = scheduling.DefaultSpreadConstraints(constraints, selector)
			memo[key] = tscs
		}
		if tscs != nil {
			out[pod.UID] = tscs
		}
	}
	return out
}

// memoKey is what the deduced constraints depend on: the pod's
// namespace, scheduler, controller and labels.
func memoKey(pod *corev1.Pod) string {
	var b strings.Builder
	b.WriteString(pod.Namespace + "|" + pod.Spec.SchedulerName + "|")
	if owner := metav1.GetControllerOfNoCopy(pod); owner != nil {
		b.WriteString(string(owner.UID))
	}
	for _, k := range slices.Sorted(maps.Keys(pod.Labels)) {
		b.WriteString("|" + k + "=" + pod.Labels[k])
	}
	return b.String()
}

type gatherer struct {
	kubeClient client.Reader
	services   map[string][]*corev1.Service
	owners     map[types.UID]*metav1.LabelSelector
}

func (g *gatherer) servicesOf(ctx context.Context, namespace string) []*corev1.Service {
	if list, ok := g.services[namespace]; ok {
		return list
	}
	var services corev1.ServiceList
	if err := g.kubeClient.List(ctx, &services, client.InNamespace(namespace)); err != nil {
		log.FromContext(ctx).V(1).Info("deducing default topology spread selectors without services", "namespace", namespace, "error", err.Error())
	}
	list := make([]*corev1.Service, len(services.Items))
	for i := range services.Items {
		list[i] = &services.Items[i]
	}
	g.services[namespace] = list
	return list
}

func (g *gatherer) ownerSelector(ctx context.Context, pod *corev1.Pod) *metav1.LabelSelector {
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return nil
	}
	if sel, ok := g.owners[owner.UID]; ok {
		return sel
	}
	sel, err := g.readOwnerSelector(ctx, pod.Namespace, owner)
	if err != nil {
		log.FromContext(ctx).V(1).Info("deducing a default topology spread selector without the pod's owner", "Pod", klog.KObj(pod), "error", err.Error())
	}
	g.owners[owner.UID] = sel
	return sel
}

// readOwnerSelector reads the selector of a ReplicationController,
// ReplicaSet or StatefulSet owner; nil for any other owner.
func (g *gatherer) readOwnerSelector(ctx context.Context, namespace string, owner *metav1.OwnerReference) (*metav1.LabelSelector, error) {
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return nil, nil //nolint:nilerr // kube-scheduler ignores an owner it cannot parse
	}
	key := types.NamespacedName{Namespace: namespace, Name: owner.Name}
	switch gv.WithKind(owner.Kind) {
	case replicationControllerKind:
		var rc corev1.ReplicationController
		if err := g.kubeClient.Get(ctx, key, &rc); err != nil {
			return nil, fmt.Errorf("getting replicationcontroller %s: %w", key, err)
		}
		if len(rc.Spec.Selector) == 0 {
			return nil, nil
		}
		return &metav1.LabelSelector{MatchLabels: rc.Spec.Selector}, nil
	case replicaSetKind:
		var rs appsv1.ReplicaSet
		if err := g.kubeClient.Get(ctx, key, &rs); err != nil {
			return nil, fmt.Errorf("getting replicaset %s: %w", key, err)
		}
		return rs.Spec.Selector, nil
	case statefulSetKind:
		var ss appsv1.StatefulSet
		if err := g.kubeClient.Get(ctx, key, &ss); err != nil {
			return nil, fmt.Errorf("getting statefulset %s: %w", key, err)
		}
		return ss.Spec.Selector, nil
	}
	return nil, nil
}
