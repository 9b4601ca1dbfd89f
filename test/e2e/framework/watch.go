package framework

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/test/environment"
)

// ListAndWatch lists into list (empty, of the kind to watch) the objects
// opts select, calls listed (when not nil) before any event arrives, then
// watches those objects from that listing on, so nothing is missed or
// seen twice between the two, calling observe with every event on the
// watch's goroutine until the test ends.
func ListAndWatch(t testing.TB, f *Framework, list client.ObjectList, listed func(), observe func(watch.Event), opts ...client.ListOption) {
	t.Helper()
	wc, err := client.NewWithWatch(f.Config, client.Options{Scheme: environment.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	watched, ok := list.DeepCopyObject().(client.ObjectList)
	if !ok {
		t.Fatalf("%T does not copy to a list", list)
	}
	if err := wc.List(t.Context(), list, opts...); err != nil {
		t.Fatal(err)
	}
	if listed != nil {
		listed()
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, watched, append(slices.Clone(opts),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				observe(ev)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}
