package operator

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// stripManagedFields is the cache's transform for every kind but Pods.
var stripManagedFields = cache.TransformStripManagedFields()

// newPodTransform returns the cache's transform for Pods. It keeps only
// what karp reads of a Pod, and makes alike pods share their common parts
// through interner (see podInterner). Pods are
// most of what the controller holds in memory (a thousand pods are most of
// its live heap), and much of a real pod is for the kubelet alone: the
// containers' commands, environment, probes and mounts, the volumes'
// ConfigMap, Secret and projected token sources, and the container
// statuses. karp reads the metadata, the scheduling constraints, each
// container's name, resources, ports and restart policy (sidecars), the
// volumes' claims, and the pod's phase, conditions and start time; all of
// these are kept. karp never writes a cached Pod back (hints are
// status patches built from scratch), so what is dropped here is never
// dropped from the API.
func newPodTransform(interner *podInterner) func(any) (any, error) {
	return func(in any) (any, error) { return slimAndIntern(interner, in) }
}

func slimAndIntern(interner *podInterner, in any) (any, error) {
	out, err := stripManagedFields(in)
	if err != nil {
		return out, err
	}
	obj := out
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		slimPod(pod)
		interner.intern(pod)
	}
	return out, nil
}

// slimPod drops, in place, the parts of a pod karp never reads.
func slimPod(pod *corev1.Pod) {
	for i := range pod.Spec.InitContainers {
		slimContainer(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		slimContainer(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		slimContainer((*corev1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		// Claims decide where a pod may run (volume topology) and what a
		// drain waits for; the other sources are the kubelet's business.
		v.ConfigMap, v.Secret, v.Projected, v.DownwardAPI = nil, nil, nil, nil
	}
	pod.Status.ContainerStatuses = nil
	pod.Status.InitContainerStatuses = nil
	pod.Status.EphemeralContainerStatuses = nil
}

// slimContainer keeps the container's name, image, resources, ports and
// restart policy.
func slimContainer(c *corev1.Container) {
	c.Command, c.Args, c.WorkingDir = nil, nil, ""
	c.Env, c.EnvFrom = nil, nil
	c.VolumeMounts, c.VolumeDevices = nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil
	c.Lifecycle, c.SecurityContext = nil, nil
	c.TerminationMessagePath, c.TerminationMessagePolicy = "", ""
}

// slimWorkload is the cache's transform for Deployments, ReplicaSets and
// StatefulSets, which karp reads for their selectors, replicas, update
// strategy and owners (rollout budgets, default topology spread) and never
// for their pod template: it drops the template's spec (most of the object,
// and a Deployment keeps up to ten old ReplicaSets). The template's labels
// stay.
func slimWorkload(in any) (any, error) {
	out, err := stripManagedFields(in)
	if err != nil {
		return out, err
	}
	obj := out
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	switch w := obj.(type) {
	case *appsv1.Deployment:
		w.Spec.Template.Spec = corev1.PodSpec{}
	case *appsv1.ReplicaSet:
		w.Spec.Template.Spec = corev1.PodSpec{}
	case *appsv1.StatefulSet:
		w.Spec.Template.Spec = corev1.PodSpec{}
		w.Spec.VolumeClaimTemplates = nil
	}
	return out, nil
}
