package index

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// NodeClaimsForProviderID lists the NodeClaims whose status.providerID is
// providerID through the NodeClaimProviderID index; none for an empty
// providerID (a Node not launched yet). The items are the cache's own
// objects: callers read them and copy before changing one.
func NodeClaimsForProviderID(ctx context.Context, reader client.Reader, providerID string) ([]karpv1.NodeClaim, error) {
	if providerID == "" {
		return nil, nil
	}
	var list karpv1.NodeClaimList
	if err := reader.List(ctx, &list, client.MatchingFields{NodeClaimProviderID: providerID}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodeclaims by providerID: %w", err)
	}
	return list.Items, nil
}

// NodeClaimForProviderID returns a copy of the first NodeClaim with the
// providerID, or nil when there is none.
func NodeClaimForProviderID(ctx context.Context, reader client.Reader, providerID string) (*karpv1.NodeClaim, error) {
	claims, err := NodeClaimsForProviderID(ctx, reader, providerID)
	if err != nil || len(claims) == 0 {
		return nil, err
	}
	return claims[0].DeepCopy(), nil
}

// NodeClaimRequestsForNode maps a Node to a reconcile request for each
// NodeClaim with its providerID (for Watches on Nodes). A failed list maps
// to nothing: the NodeClaim's own watch and requeues bring it back.
func NodeClaimRequestsForNode(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		node, ok := o.(*corev1.Node)
		if !ok {
			return nil
		}
		claims, err := NodeClaimsForProviderID(ctx, reader, node.Spec.ProviderID)
		if err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(claims))
		for i := range claims {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: claims[i].Name}})
		}
		return out
	}
}
