package index

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// NodePoolsForNodeClass maps a NodeClass to requests for the NodePools
// that reference it by name (through the NodePoolNodeClassName index), for
// controllers that reconcile NodePools when their NodeClass changes.
func NodePoolsForNodeClass(reader client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list karpv1.NodePoolList
		if err := reader.List(ctx, &list, client.MatchingFields{NodePoolNodeClassName: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(list.Items))
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
		}
		return out
	}
}
