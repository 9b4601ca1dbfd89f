package view

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// MinRedrawInterval is the shortest time between two frames.
const MinRedrawInterval = 250 * time.Millisecond

// nodeClaims is the NodeClaim resource, read for DisruptionBlocked.
var nodeClaims = schema.GroupVersionResource{Group: karpv1.Group, Version: "v1", Resource: "nodeclaims"}

// Watch draws the view to out until ctx ends: once the Node, Pod, Event
// and NodeClaim informers have synced, then again after every change, at
// most once per MinRedrawInterval. Below the nodes it lists the pending
// pods with karp's reason (its FailedScheduling events) and the nodes
// karp keeps with theirs (DisruptionBlocked).
func Watch(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, prices PriceTable, header string, out io.Writer) error {
	factory := informers.NewSharedInformerFactory(cs, 0)
	nodeInformer := factory.Core().V1().Nodes()
	podInformer := factory.Core().V1().Pods()
	eventInformer := factory.Core().V1().Events()
	dynFactory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	claimInformer := dynFactory.ForResource(nodeClaims)
	changed := make(chan struct{}, 1)
	notify := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { signal(changed) },
		UpdateFunc: func(any, any) { signal(changed) },
		DeleteFunc: func(any) { signal(changed) },
	}
	for _, inf := range []cache.SharedIndexInformer{nodeInformer.Informer(), podInformer.Informer(), eventInformer.Informer(), claimInformer.Informer()} {
		if _, err := inf.AddEventHandler(notify); err != nil {
			return fmt.Errorf("watching the cluster: %w", err)
		}
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	dynFactory.Start(ctx.Done())
	defer dynFactory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("syncing %v: %w", typ, ctx.Err())
		}
	}
	for typ, ok := range dynFactory.WaitForCacheSync(ctx.Done()) {
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
		events, err := eventInformer.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		claims, err := claimInformer.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		snap := Build(nodes, pods, prices)
		snap.Explain(FailedScheduling(events), DisruptionBlocked(claims))
		return Render(out, header, snap, true)
	}
	return redrawLoop(ctx, changed, draw)
}

// FailedScheduling maps each pod ("namespace/name") to the message of
// karp's latest FailedScheduling event on it (the kube-scheduler's are
// left out).
func FailedScheduling(events []*corev1.Event) map[string]string {
	out := map[string]string{}
	at := map[string]time.Time{}
	for _, e := range events {
		if e.Reason != "FailedScheduling" || e.InvolvedObject.Kind != "Pod" ||
			!strings.Contains(e.ReportingController+e.Source.Component, "karp") {
			continue
		}
		key := e.InvolvedObject.Namespace + "/" + e.InvolvedObject.Name
		when := eventTime(e)
		if t, ok := at[key]; !ok || when.After(t) {
			out[key], at[key] = e.Message, when
		}
	}
	return out
}

// eventTime is when the event last happened.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

// DisruptionBlocked maps each node to its NodeClaim's True
// DisruptionBlocked condition, "Reason: message".
func DisruptionBlocked(claims []runtime.Object) map[string]string {
	out := map[string]string{}
	for _, obj := range claims {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		node, _, _ := unstructured.NestedString(u.Object, "status", "nodeName")
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if !ok || m["type"] != "DisruptionBlocked" || m["status"] != "True" || node == "" {
				continue
			}
			out[node] = fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
	}
	return out
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
