package cloudprovider

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// IsManaged reports whether the NodeClaim's nodeClassRef names a NodeClass
// kind the cloud provider supports. Every NodeClaim controller asks it first. Other NodeClaims belong to another
// provider's controller (or to nobody) and karp leaves them alone.
func IsManaged(nodeClaim *karpv1.NodeClaim, cp CloudProvider, scheme *runtime.Scheme) bool {
	ref := nodeClaim.Spec.NodeClassRef
	if ref == nil {
		return false
	}
	want := schema.GroupKind{Group: ref.Group, Kind: ref.Kind}
	for _, nc := range cp.GetSupportedNodeClasses() {
		if gvk, err := apiutil.GVKForObject(nc, scheme); err == nil && gvk.GroupKind() == want {
			return true
		}
	}
	return false
}
