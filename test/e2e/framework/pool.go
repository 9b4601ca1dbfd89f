package framework

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kwokv1alpha1 "github.com/karp-autoscaler/karp/pkg/apis/kwok/v1alpha1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/test"
)

// Create creates obj and fails the test if it cannot.
func Create(t testing.TB, cl client.Client, obj client.Object) {
	t.Helper()
	if err := cl.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// CreatePool creates a test's namespace, KWOKNodeClass and NodePool, all
// named name; pool's NodeClassRef is pointed at the KWOKNodeClass.
func CreatePool(t testing.TB, cl client.Client, name string, pool *karpv1.NodePool) {
	t.Helper()
	Create(t, cl, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	Create(t, cl, test.MakeKWOKNodeClass(name).Obj())
	pool.Spec.Template.Spec.NodeClassRef = kwokv1alpha1.NodeClassReference(name)
	Create(t, cl, pool)
}

// RunPool is the usual start of a disruption test: CreatePool, StartKarp
// with extraArgs, and DeletePool when the test ends (registered after the
// controller, so karp still runs while the pool's nodes are terminated).
func RunPool(t testing.TB, name string, pool *karpv1.NodePool, extraArgs ...string) (*Framework, *Karp) {
	t.Helper()
	f := Current(t)
	CreatePool(t, f.Client, name, pool)
	k := StartKarp(t, f, extraArgs...)
	t.Cleanup(func() {
		if t.Failed() {
			DumpCluster(t, f.Client)
			k.noteFailure()
		}
		DeletePool(f.Client, name)
	})
	return f, k
}

// DeletePool deletes the namespace (the workload) and NodePool named name,
// then the pool's NodeClaims, waits until karp has terminated them, then
// deletes the KWOKNodeClass, and waits until every object is gone (up to
// two minutes each) so the next test starts clean. karp must be running.
func DeletePool(cl client.Client, name string) {
	ctx := context.Background()
	_ = cl.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	_ = cl.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}})
	_ = cl.DeleteAllOf(ctx, &karpv1.NodeClaim{}, client.MatchingLabels{karpv1.NodePoolLabelKey: name})
	waitGone(func() bool { return len(PoolNodeClaims(ctx, cl, name)) == 0 })
	_ = cl.Delete(ctx, &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}})
	for _, obj := range []client.Object{&corev1.Namespace{}, &karpv1.NodePool{}, &kwokv1alpha1.KWOKNodeClass{}} {
		waitGone(func() bool {
			return apierrors.IsNotFound(cl.Get(ctx, types.NamespacedName{Name: name}, obj))
		})
	}
}

// waitGone polls gone every half second for up to two minutes.
func waitGone(gone func() bool) {
	deadline := time.Now().Add(2 * time.Minute)
	for !gone() && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
}

// ApplyManifest creates every object of a multi-document YAML file in
// namespace, after mutate (when not nil) has changed it.
func ApplyManifest(t testing.TB, cl client.Client, path, namespace string, mutate func(*unstructured.Unstructured)) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			t.Fatalf("decoding %s: %v", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		obj.SetNamespace(namespace)
		if mutate != nil {
			mutate(obj)
		}
		Create(t, cl, obj)
	}
}
