package view

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// MinRedrawInterval is the shortest time between two frames.
const MinRedrawInterval = 250 * time.Millisecond

// Watch draws the view to out until ctx ends: once the Node and Pod
// informers have synced, then again after every change, at most once per
// MinRedrawInterval.
func Watch(ctx context.Context, cs kubernetes.Interface, prices PriceTable, header string, out io.Writer) error {
	factory := informers.NewSharedInformerFactory(cs, 0)
	nodeInformer := factory.Core().V1().Nodes()
	podInformer := factory.Core().V1().Pods()
	changed := make(chan struct{}, 1)
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal(changed) },
		UpdateFunc: func(any, any) { signal(changed) },
		DeleteFunc: func(any) { signal(changed) },
	}
	for _, inf := range []cache.SharedIndexInformer{nodeInformer.Informer(), podInformer.Informer()} {
		if _, err := inf.AddEventHandler(notify); err != nil {
			return fmt.Errorf("watching the cluster: %w", err)
		}
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("syncing %v: %w", typ, ctx.Err())
		}
	}
	draw := func() error {
		nodes, err := nodeInformer.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		pods, err := podInformer.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		return Render(out, header, Build(nodes, pods, prices), true)
	}
	return redrawLoop(ctx, changed, draw)
}

// redrawLoop draws once, then after each signal on changed, never more
// often than MinRedrawInterval.
func redrawLoop(ctx context.Context, changed <-chan struct{}, draw func() error) error {
	if err := draw(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
		if err := draw(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(MinRedrawInterval):
		}
	}
}

// signal records a change without blocking; changes coalesce.
func signal(changed chan<- struct{}) {
	select {
	case changed <- struct{}{}:
	default:
	}
}
