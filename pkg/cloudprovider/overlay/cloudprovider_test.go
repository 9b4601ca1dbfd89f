package overlay_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	karpv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/v1alpha1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	cpfake "github.com/karp-autoscaler/karp/pkg/cloudprovider/fake"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/overlay"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// launcher is a provider that records the instance types CreateFrom got.
type launcher struct {
	*cpfake.CloudProvider
	got []*cloudprovider.InstanceType
}

func (l *launcher) CreateFrom(ctx context.Context, nodeClaim *karpv1.NodeClaim, types []*cloudprovider.InstanceType) (*karpv1.NodeClaim, error) {
	l.got = types
	return l.Create(ctx, nodeClaim)
}

func TestDecoratorWaitsForTheEvaluation(t *testing.T) {
	ctx := t.Context()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{karpv1.AddToScheme, karpv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	up := test.MakeNodeOverlay("up").PriceAdjustment("+1").Obj()
	up.Generation = 1
	pool := test.MakeNodePool("default").Obj()
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(up, pool).Build()
	inner := &launcher{CloudProvider: cpfake.New(instanceType("m1", "m", 1))}
	cp := overlay.Decorate(inner, kube)

	// 1. Before any evaluation: the NodePool waits.
	if _, err := cp.GetInstanceTypes(ctx, pool); !cloudprovider.IsUnevaluatedNodePoolError(err) {
		t.Fatalf("before the first evaluation: err = %v, want UnevaluatedNodePoolError", err)
	}
	// 2. Evaluated as the overlays are: applied.
	cp.Store().Update(decode(t, up), map[string]int64{"up": 1}, []string{"default"})
	types, err := cp.GetInstanceTypes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if p := prices(types[0])["a/on-demand"]; p != 2 {
		t.Errorf("price = %v, want 1 + 1", p)
	}
	// 3. A NodePool the evaluation did not cover waits.
	if _, err := cp.GetInstanceTypes(ctx, test.MakeNodePool("new").Obj()); !cloudprovider.IsUnevaluatedNodePoolError(err) {
		t.Errorf("new nodepool: err = %v, want UnevaluatedNodePoolError", err)
	}
	// 4. Launches use the overlaid types.
	nc := test.MakeNodeClaim("nc").Label(karpv1.NodePoolLabelKey, "default").Obj()
	if _, err := cp.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if len(inner.got) != 1 || prices(inner.got[0])["a/on-demand"] != 2 {
		t.Errorf("CreateFrom got %v, want the overlaid m1", inner.got)
	}
	// A NodeClaim of another NodeClass than the NodePool's now: the
	// NodePool's types are not its own, the provider launches from its own.
	inner.got = nil
	moved := test.MakeNodeClaim("moved").Label(karpv1.NodePoolLabelKey, "default").
		NodeClassRef(kwokv1alpha1.NodeClassReference("older")).Obj()
	if _, err := cp.Create(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if inner.got != nil {
		t.Errorf("CreateFrom got the NodePool's types for a NodeClaim of another NodeClass")
	}
	// 5. An overlay changed since (a new generation): waits again.
	up.Generation = 2
	if err := kube.Update(ctx, up); err != nil {
		t.Fatal(err)
	}
	stored := &karpv1alpha1.NodeOverlay{}
	if err := kube.Get(ctx, clientKey("up"), stored); err != nil {
		t.Fatal(err)
	}
	cp.Store().Update(decode(t, up), map[string]int64{"up": stored.Generation - 1}, []string{"default"})
	if _, err := cp.GetInstanceTypes(ctx, pool); !cloudprovider.IsUnevaluatedNodePoolError(err) {
		t.Errorf("changed overlay: err = %v, want UnevaluatedNodePoolError", err)
	}
	// 6. An overlay created since: waits.
	cp.Store().Update(decode(t, up), map[string]int64{}, []string{"default"})
	if _, err := cp.GetInstanceTypes(ctx, pool); !cloudprovider.IsUnevaluatedNodePoolError(err) {
		t.Errorf("new overlay: err = %v, want UnevaluatedNodePoolError", err)
	}
}

func clientKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
