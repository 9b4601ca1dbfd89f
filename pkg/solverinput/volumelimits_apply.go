package solverinput

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// VolumeObjects finds what a claim's CSI driver is read from. Each method
// returns nil and no error when the object does not exist; an error is a
// failed read. The controller reads them through the API (FillVolumeLimits), `karp
// simulate` from the manifests.
type VolumeObjects interface {
	Claim(ctx context.Context, key types.NamespacedName) (*corev1.PersistentVolumeClaim, error)
	Volume(ctx context.Context, name string) (*corev1.PersistentVolume, error)
	Class(ctx context.Context, name string) (*storagev1.StorageClass, error)
}

// ApplyVolumeLimits sets the VolumeLimits of the registered nodes in in.Nodes from
// their CSINodes and, when some node has limits, in.PodVolumes for in.Pods
// and the pods of every node (those bound or nominated there, and those a
// consolidation would move), resolving each claim's driver through objs.
// When no node reports a limit it reads no claim at all: nothing would be
// checked.
func ApplyVolumeLimits(ctx context.Context, in *simulation.Input, csiNodes []*storagev1.CSINode, objs VolumeObjects) error {
	limits := make(map[string]scheduling.VolumeLimits, len(csiNodes))
	for _, csiNode := range csiNodes {
		if l := scheduling.CSINodeLimits(csiNode); l != nil {
			limits[csiNode.Name] = l
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
	r := &resolver{objs: objs, drivers: map[types.NamespacedName]string{}, classes: map[string]*storagev1.StorageClass{}}
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
	objs    VolumeObjects
	drivers map[types.NamespacedName]string
	classes map[string]*storagev1.StorageClass
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
	pvc, err := r.objs.Claim(ctx, key)
	if err != nil {
		return "", err
	}
	if pvc == nil {
		if vol.Ephemeral == nil || vol.Ephemeral.VolumeClaimTemplate == nil {
			return "", nil
		}
		pvc = &corev1.PersistentVolumeClaim{Spec: vol.Ephemeral.VolumeClaimTemplate.Spec}
	}
	if pvc.Spec.VolumeName != "" {
		pv, err := r.objs.Volume(ctx, pvc.Spec.VolumeName)
		if err != nil {
			return "", err
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
	sc, err := r.objs.Class(ctx, name)
	if err != nil {
		return nil, err
	}
	r.classes[name] = sc
	return sc, nil
}
