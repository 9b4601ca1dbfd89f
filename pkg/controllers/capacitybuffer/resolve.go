package capacitybuffer

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1beta1"
	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// resolution is what a buffer resolves to.
type resolution struct {
	template corev1.PodTemplateSpec
	// podTemplate names the PodTemplate used (podTemplateRef only), with
	// its generation.
	podTemplate           string
	podTemplateGeneration int64
	// scalableReplicas are the scalable object's replicas (scalableRef
	// only), for percentage.
	scalableReplicas *int32
	replicas         int32
}

// errNotReady is a buffer that cannot be resolved as it is: its reason and
// message go into ReadyForProvisioning and the reconcile is not retried
// until the buffer or what it references changes (or the resync).
type errNotReady struct{ reason, message string }

func (e *errNotReady) Error() string { return e.message }

// resolve reads the buffer's pod template and computes its replicas. An
// *errNotReady is the buffer's fault; any other error is transient.
func resolve(ctx context.Context, cache, apiReader client.Reader, cb *autoscalingv1beta1.CapacityBuffer) (*resolution, error) {
	var res *resolution
	var err error
	switch {
	case cb.Spec.PodTemplateRef != nil:
		res, err = resolvePodTemplate(ctx, cache, cb)
	case cb.Spec.ScalableRef != nil:
		res, err = resolveScalable(ctx, apiReader, cb)
	default:
		return nil, &errNotReady{autoscalingv1beta1.ReasonResolutionFailed, "Neither podTemplateRef nor scalableRef is set"}
	}
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{Spec: res.template.Spec}
	res.replicas = buffers.DesiredReplicas(cb.Spec, scheduling.PodRequests(pod), res.scalableReplicas)
	return res, nil
}

func resolvePodTemplate(ctx context.Context, cache client.Reader, cb *autoscalingv1beta1.CapacityBuffer) (*resolution, error) {
	name := cb.Spec.PodTemplateRef.Name
	pt := &corev1.PodTemplate{}
	if err := cache.Get(ctx, types.NamespacedName{Namespace: cb.Namespace, Name: name}, pt); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &errNotReady{autoscalingv1beta1.ReasonPodTemplateNotFound, fmt.Sprintf("PodTemplate %s/%s not found", cb.Namespace, name)}
		}
		return nil, fmt.Errorf("getting podtemplate %s/%s: %w", cb.Namespace, name, err)
	}
	return &resolution{template: pt.Template, podTemplate: pt.Name, podTemplateGeneration: pt.Generation}, nil
}

// resolveScalable reads a Deployment, ReplicaSet or StatefulSet (group
// apps) or a Job (group batch; its parallelism counts as replicas). An
// empty apiGroup means the kind's group, as upstream Karpenter reads it.
func resolveScalable(ctx context.Context, apiReader client.Reader, cb *autoscalingv1beta1.CapacityBuffer) (*resolution, error) {
	ref := cb.Spec.ScalableRef
	obj, template, replicas := scalableObject(ref)
	if obj == nil {
		return nil, &errNotReady{autoscalingv1beta1.ReasonResolutionFailed,
			fmt.Sprintf("scalableRef kind %q in API group %q is not supported (Deployment, ReplicaSet, StatefulSet in apps; Job in batch)", ref.Kind, ref.APIGroup)}
	}
	key := types.NamespacedName{Namespace: cb.Namespace, Name: ref.Name}
	if err := apiReader.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &errNotReady{autoscalingv1beta1.ReasonScalableRefNotFound, fmt.Sprintf("%s %s not found", ref.Kind, key)}
		}
		return nil, fmt.Errorf("getting %s %s: %w", ref.Kind, key, err)
	}
	n := replicas()
	return &resolution{template: *template(), scalableReplicas: &n}, nil
}

// scalableObject returns an empty object of the reference's kind and
// accessors for its pod template and replicas (a nil replicas field counts
// as 1, the API server's default); nil for an unsupported kind.
func scalableObject(ref *autoscalingv1beta1.ScalableRef) (client.Object, func() *corev1.PodTemplateSpec, func() int32) {
	orOne := func(p *int32) int32 {
		if p == nil {
			return 1
		}
		return *p
	}
	group := ref.APIGroup
	switch {
	case ref.Kind == autoscalingv1beta1.KindDeployment && (group == "" || group == appsv1.GroupName):
		d := &appsv1.Deployment{}
		return d, func() *corev1.PodTemplateSpec { return &d.Spec.Template }, func() int32 { return orOne(d.Spec.Replicas) }
	case ref.Kind == autoscalingv1beta1.KindReplicaSet && (group == "" || group == appsv1.GroupName):
		rs := &appsv1.ReplicaSet{}
		return rs, func() *corev1.PodTemplateSpec { return &rs.Spec.Template }, func() int32 { return orOne(rs.Spec.Replicas) }
	case ref.Kind == autoscalingv1beta1.KindStatefulSet && (group == "" || group == appsv1.GroupName):
		ss := &appsv1.StatefulSet{}
		return ss, func() *corev1.PodTemplateSpec { return &ss.Spec.Template }, func() int32 { return orOne(ss.Spec.Replicas) }
	case ref.Kind == autoscalingv1beta1.KindJob && (group == "" || group == batchv1.GroupName):
		j := &batchv1.Job{}
		return j, func() *corev1.PodTemplateSpec { return &j.Spec.Template }, func() int32 { return orOne(j.Spec.Parallelism) }
	}
	return nil, nil, nil
}

// notReady unwraps an *errNotReady.
func notReady(err error) (*errNotReady, bool) {
	var nr *errNotReady
	ok := errors.As(err, &nr)
	return nr, ok
}
