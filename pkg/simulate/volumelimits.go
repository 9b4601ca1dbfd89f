package simulate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/karp-autoscaler/karp/pkg/manifest"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/solverinput"
)

// applyVolumeLimits gives the existing nodes the CSI volume limits of
// their CSINodes among the manifests, and the pods the claims they attach,
// as the controller does from the API. It warns about each CSINode of a
// node that is not among the manifests.
func applyVolumeLimits(ctx context.Context, set *manifest.Set, in *simulation.Input) ([]string, error) {
	nodes := make(map[string]bool, len(in.Nodes))
	for _, n := range in.Nodes {
		nodes[n.Name] = true
	}
	var warnings []string
	for _, csiNode := range set.CSINodes {
		if !nodes[csiNode.Name] {
			warnings = append(warnings, fmt.Sprintf("CSINode %s: node %q is not among the manifests; ignored", csiNode.Name, csiNode.Name))
		}
	}
	return warnings, solverinput.ApplyVolumeLimits(ctx, in, set.CSINodes, newManifestObjects(set))
}

// manifestObjects are the claims, volumes and classes of the manifests;
// one that is not among them does not exist.
type manifestObjects struct {
	claims  map[types.NamespacedName]*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
}

var _ solverinput.VolumeObjects = (*manifestObjects)(nil)

func newManifestObjects(set *manifest.Set) *manifestObjects {
	o := &manifestObjects{
		claims:  make(map[types.NamespacedName]*corev1.PersistentVolumeClaim, len(set.Claims)),
		volumes: make(map[string]*corev1.PersistentVolume, len(set.Volumes)),
		classes: make(map[string]*storagev1.StorageClass, len(set.StorageClasses)),
	}
	for _, pvc := range set.Claims {
		o.claims[types.NamespacedName{Namespace: pvc.Namespace, Name: pvc.Name}] = pvc
	}
	for _, pv := range set.Volumes {
		o.volumes[pv.Name] = pv
	}
	for _, sc := range set.StorageClasses {
		o.classes[sc.Name] = sc
	}
	return o
}

func (o *manifestObjects) Claim(_ context.Context, key types.NamespacedName) (*corev1.PersistentVolumeClaim, error) {
	return o.claims[key], nil
}

func (o *manifestObjects) Volume(_ context.Context, name string) (*corev1.PersistentVolume, error) {
	return o.volumes[name], nil
}

func (o *manifestObjects) Class(_ context.Context, name string) (*storagev1.StorageClass, error) {
	return o.classes[name], nil
}
