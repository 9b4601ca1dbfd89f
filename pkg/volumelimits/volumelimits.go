package volumelimits

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// +kubebuilder:rbac:groups=storage.k8s.io,resources=csinodes;storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes,verbs=get;list;watch

// Fill sets the VolumeLimits of the registered nodes in in.Nodes from their
// CSINodes and, when some node has limits, in.PodVolumes for in.Pods and
// the pods of every node (those bound or nominated there, and those a
// consolidation would move). When no node reports a limit it reads no claim
// at all: nothing would be checked.
func Fill(ctx context.Context, kubeClient client.Reader, in *simulation.Input) error {
	var csiNodes storagev1.CSINodeList
	// Every read here only reads: with the manager's cache, the objects
	// are not copied (UnsafeDisableDeepCopy), which in a cluster of many
	// claims is most of what a pass would allocate here.
	if err := kubeClient.List(ctx, &csiNodes, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing csinodes: %w", err)
	}
	limits := make(map[string]scheduling.VolumeLimits, len(csiNodes.Items))
	for i := range csiNodes.Items {
		if l := scheduling.CSINodeLimits(&csiNodes.Items[i]); l != nil {
			limits[csiNodes.Items[i].Name] = l
		}
	}
	limited := false
	for _, n := range in.Nodes {
		// An in-flight NodeClaim (Requirements set) has no Node and so no
		// CSINode yet; it is not limited.
		if n.Requirements != nil {
			continue
		}
		if l, ok := limits[n.Name]; ok {
			n.VolumeLimits = l
			limited = true
		}
	}
	if !limited {
		return nil
	}
	r := &resolver{kubeClient: kubeClient, drivers: map[types.NamespacedName]string{}, classes: map[string]*storagev1.StorageClass{}}
	in.PodVolumes = map[types.UID]scheduling.Volumes{}
	add := func(pod *corev1.Pod) error {
		if _, done := in.PodVolumes[pod.UID]; done {
			return nil
		}
		vols, err := r.podVolumes(ctx, pod)
		if err != nil {
			return err
		}
		if len(vols) > 0 {
			in.PodVolumes[pod.UID] = vols
		}
		return nil
	}
	for _, pod := range in.Pods {
		if err := add(pod); err != nil {
			return err
		}
	}
	for _, n := range in.Nodes {
		for _, pod := range n.Pods {
			if err := add(pod); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolver remembers, within one pass, each claim's driver and each
// StorageClass, so claims and classes many pods share are read once.
type resolver struct {
	kubeClient client.Reader
	drivers    map[types.NamespacedName]string
	classes    map[string]*storagev1.StorageClass
}

// podVolumes returns the pod's claims by CSI driver; nil when none has a
// known driver.
func (r *resolver) podVolumes(ctx context.Context, pod *corev1.Pod) (scheduling.Volumes, error) {
	var out scheduling.Volumes
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		name := simulation.VolumeClaimName(pod, *vol)
		if name == "" {
			continue
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: name}
		driver, ok := r.drivers[key]
		if !ok {
			var err error
			if driver, err = r.claimDriver(ctx, key, vol); err != nil {
				return nil, err
			}
			r.drivers[key] = driver
		}
		if driver == "" {
			continue
		}
		if out == nil {
			out = scheduling.Volumes{}
		}
		out.Add(driver, scheduling.ClaimKey(key.Namespace, key.Name))
	}
	return out, nil
}

// claimDriver reads the claim and what names its driver. A generic
// ephemeral volume whose claim is not created yet counts with the claim
// its template describes.
func (r *resolver) claimDriver(ctx context.Context, key types.NamespacedName, vol *corev1.Volume) (string, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.kubeClient.Get(ctx, key, pvc, client.UnsafeDisableDeepCopy); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("getting persistentvolumeclaim %s: %w", key, err)
		}
		if vol.Ephemeral == nil || vol.Ephemeral.VolumeClaimTemplate == nil {
			return "", nil
		}
		pvc = &corev1.PersistentVolumeClaim{Spec: vol.Ephemeral.VolumeClaimTemplate.Spec}
	}
	if pvc.Spec.VolumeName != "" {
		pv := &corev1.PersistentVolume{}
		if err := r.kubeClient.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv, client.UnsafeDisableDeepCopy); err != nil {
			if !apierrors.IsNotFound(err) {
				return "", fmt.Errorf("getting persistentvolume %s: %w", pvc.Spec.VolumeName, err)
			}
			pv = nil
		}
		return scheduling.ClaimDriver(pvc, pv, nil), nil
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return "", nil
	}
	sc, err := r.class(ctx, *pvc.Spec.StorageClassName)
	if err != nil {
		return "", err
	}
	return scheduling.ClaimDriver(pvc, nil, sc), nil
}

// class reads a StorageClass once per pass; nil when it is gone.
func (r *resolver) class(ctx context.Context, name string) (*storagev1.StorageClass, error) {
	if sc, ok := r.classes[name]; ok {
		return sc, nil
	}
	sc := &storagev1.StorageClass{}
	if err := r.kubeClient.Get(ctx, types.NamespacedName{Name: name}, sc, client.UnsafeDisableDeepCopy); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("getting storageclass %s: %w", name, err)
		}
		sc = nil
	}
	r.classes[name] = sc
	return sc, nil
}
