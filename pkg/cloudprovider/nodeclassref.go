package cloudprovider

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// GetNodeClass fetches the NodeClass a NodePool references, or nil when
// the reference is empty, the object does not exist, or its kind is not
// one the provider supports.
func GetNodeClass(ctx context.Context, kubeClient client.Client, cp CloudProvider, ref *karpv1.NodeClassReference) (NodeClass, error) {
	if ref == nil {
		return nil, nil
	}
	want := schema.GroupKind{Group: ref.Group, Kind: ref.Kind}
	for _, supported := range cp.GetSupportedNodeClasses() {
		gvk, err := apiutil.GVKForObject(supported, kubeClient.Scheme())
		if err != nil {
			return nil, fmt.Errorf("resolving nodeclass kind: %w", err)
		}
		if gvk.GroupKind() != want {
			continue
		}
		obj := supported.DeepCopyObject().(NodeClass)
		if err := kubeClient.Get(ctx, client.ObjectKey{Name: ref.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("getting nodeclass %s: %w", ref.Name, err)
		}
		return obj, nil
	}
	return nil, nil
}
