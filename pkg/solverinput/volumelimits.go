package solverinput

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/simulation"
)

// +kubebuilder:rbac:groups=storage.k8s.io,resources=csinodes;storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes,verbs=get;list;watch

// FillVolumeLimits is ApplyVolumeLimits with the CSINodes, claims, volumes and classes read
// through kubeClient.
func FillVolumeLimits(ctx context.Context, kubeClient client.Reader, in *simulation.Input) error {
	var csiNodes storagev1.CSINodeList
	// Every read here only reads: with the manager's cache, the objects
	// are not copied (UnsafeDisableDeepCopy), which in a cluster of many
	// claims is most of what a pass would allocate here.
	if err := kubeClient.List(ctx, &csiNodes, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing csinodes: %w", err)
	}
	nodes := make([]*storagev1.CSINode, len(csiNodes.Items))
	for i := range csiNodes.Items {
		nodes[i] = &csiNodes.Items[i]
	}
	return ApplyVolumeLimits(ctx, in, nodes, apiObjects{kubeClient: kubeClient})
}

// apiObjects reads claims, volumes and classes through the API.
type apiObjects struct {
	kubeClient client.Reader
}

func (a apiObjects) Claim(ctx context.Context, key types.NamespacedName) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if found, err := a.get(ctx, key, pvc, "persistentvolumeclaim"); !found {
		return nil, err
	}
	return pvc, nil
}

func (a apiObjects) Volume(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	pv := &corev1.PersistentVolume{}
	if found, err := a.get(ctx, types.NamespacedName{Name: name}, pv, "persistentvolume"); !found {
		return nil, err
	}
	return pv, nil
}

func (a apiObjects) Class(ctx context.Context, name string) (*storagev1.StorageClass, error) {
	sc := &storagev1.StorageClass{}
	if found, err := a.get(ctx, types.NamespacedName{Name: name}, sc, "storageclass"); !found {
		return nil, err
	}
	return sc, nil
}

// get reads one object into obj; found is false, without an error, when
// it does not exist.
func (a apiObjects) get(ctx context.Context, key types.NamespacedName, obj client.Object, resource string) (found bool, err error) {
	err = a.kubeClient.Get(ctx, key, obj, client.UnsafeDisableDeepCopy)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	name := key.Name
	if key.Namespace != "" {
		name = key.String()
	}
	return false, fmt.Errorf("getting %s %s: %w", resource, name, err)
}
