package singleton_test

import (
	"testing"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/karp-autoscaler/karp/pkg/singleton"
)

func TestSourceQueuesOneNamedRequest(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	if err := singleton.Source("loop").Start(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	if n := q.Len(); n != 1 {
		t.Fatalf("%d requests queued, want 1", n)
	}
	if got, _ := q.Get(); got.Name != "loop" || got.Namespace != "" {
		t.Errorf("queued %v, want the request named loop", got)
	}
}
