package invariants

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// DefaultNodeGoneDelay is how long the monitor waits after a Node is
// deleted before it counts the pods still bound to it as lost with it,
// and after a pod was deleted directly before it decides whether its
// owner explains the deletion. Pods, Nodes and their owners arrive on
// separate watches; the wait lets an eviction or a scale-down seen late
// on its watch be counted as what it was.
const DefaultNodeGoneDelay = 2 * time.Second

// Options configure a Monitor.
type Options struct {
	// Clock stamps violations; the real clock when nil.
	Clock clock.WithTicker
	// NodeGoneDelay overrides DefaultNodeGoneDelay when positive.
	NodeGoneDelay time.Duration
}

// Monitor watches pods, nodes and budgets from Start until Stop.
type Monitor struct {
	clock     clock.WithTicker
	clientset kubernetes.Interface
	// parent is Start's context without its cancellation, for Stop's
	// final reads.
	parent    context.Context
	delay     time.Duration
	cancel    context.CancelFunc
	done      chan struct{}
	factory   informers.SharedInformerFactory
	rsLister  appslisters.ReplicaSetLister
	stsLister appslisters.StatefulSetLister
	nsLister  corelisters.NamespaceLister

	mu          sync.Mutex
	pods        map[types.UID]*podRecord
	budgets     map[string]*policyv1.PodDisruptionBudget // by namespace/name
	nodes       map[string]*corev1.Node                  // live Nodes by name
	removed     map[string]time.Time                     // deleted Nodes by name
	gone        []goneNode                               // deleted Nodes whose pods are not yet counted
	deletions   []pendingDeletion                        // direct deletions not yet committed
	involuntary map[string]bool
	raw         Report // before involuntary nodes are excused
}

// podRecord is the last state seen of a pod and whether its end has been
// accounted for.
type podRecord struct {
	pod  *corev1.Pod
	done bool
}

type goneNode struct {
	name string
	at   time.Time
}

// Start begins watching the cluster behind cfg and returns once every
// watch has listed its objects, so that pods running at Start are known.
// The context bounds the start and the monitor's life; Stop ends it.
func Start(ctx context.Context, cfg *rest.Config, opts Options) (*Monitor, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building clientset: %w", err)
	}
	m := &Monitor{
		clock:       opts.Clock,
		delay:       opts.NodeGoneDelay,
		done:        make(chan struct{}),
		clientset:   cs,
		parent:      context.WithoutCancel(ctx),
		factory:     informers.NewSharedInformerFactory(cs, 0),
		pods:        map[types.UID]*podRecord{},
		budgets:     map[string]*policyv1.PodDisruptionBudget{},
		nodes:       map[string]*corev1.Node{},
		removed:     map[string]time.Time{},
		involuntary: map[string]bool{},
	}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	if m.delay <= 0 {
		m.delay = DefaultNodeGoneDelay
	}
	runCtx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	if err := m.register(); err != nil {
		cancel()
		return nil, err
	}
	m.factory.Start(runCtx.Done())
	for typ, ok := range m.factory.WaitForCacheSync(runCtx.Done()) {
		if !ok {
			cancel()
			m.factory.Shutdown()
			return nil, fmt.Errorf("listing %v: %w", typ, context.Cause(runCtx))
		}
	}
	go m.flushLoop(runCtx)
	return m, nil
}

// register adds the event handlers; every handler takes m.mu, so the
// monitor's state changes one event at a time.
func (m *Monitor) register() error {
	pods := m.factory.Core().V1().Pods().Informer()
	nodes := m.factory.Core().V1().Nodes().Informer()
	budgets := m.factory.Policy().V1().PodDisruptionBudgets().Informer()
	m.rsLister = m.factory.Apps().V1().ReplicaSets().Lister()
	m.stsLister = m.factory.Apps().V1().StatefulSets().Lister()
	m.nsLister = m.factory.Core().V1().Namespaces().Lister()
	handlers := []struct {
		informer cache.SharedIndexInformer
		funcs    cache.ResourceEventHandlerFuncs
	}{
		{nodes, cache.ResourceEventHandlerFuncs{
			AddFunc:    m.onNode,
			UpdateFunc: func(_, obj any) { m.onNode(obj) },
			DeleteFunc: m.onNodeDeleted,
		}},
		{budgets, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { m.onBudget(obj, false) },
			UpdateFunc: func(_, obj any) { m.onBudget(obj, false) },
			DeleteFunc: func(obj any) { m.onBudget(obj, true) },
		}},
	}
	podHandler := cache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { m.onPod(obj, false, initial) },
		UpdateFunc: func(_, obj any) { m.onPod(obj, false, false) },
		DeleteFunc: func(obj any) { m.onPod(obj, true, false) },
	}
	if _, err := pods.AddEventHandler(podHandler); err != nil {
		return fmt.Errorf("adding event handler: %w", err)
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.funcs); err != nil {
			return fmt.Errorf("adding event handler: %w", err)
		}
	}
	// A failed watch is expected under chaos: count it rather than log
	// it. The informer lists again on its own.
	for _, informer := range []cache.SharedIndexInformer{pods, nodes, budgets,
		m.factory.Apps().V1().ReplicaSets().Informer(), m.factory.Apps().V1().StatefulSets().Informer(),
		m.factory.Core().V1().Namespaces().Informer()} {
		if err := informer.SetWatchErrorHandlerWithContext(m.watchError); err != nil {
			return fmt.Errorf("setting watch error handler: %w", err)
		}
	}
	return nil
}

func (m *Monitor) watchError(context.Context, *cache.Reflector, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.raw.WatchErrors++
}

// Involuntary tells the monitor the node was taken by something other
// than karp's voluntary disruption (an interruption, a reclaim, a manual
// delete): violations on it are excused. It may be called before or after
// the node goes.
func (m *Monitor) Involuntary(nodeName string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.involuntary[nodeName] = true
}

// Report returns what the monitor has seen so far, without stopping it.
// Deleted Nodes still within their delay are not yet counted.
func (m *Monitor) Report() Report {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.report()
}

// Stop waits out the delay of the last deleted Node or direct deletion,
// ends the watches, settles what is left and returns the report. Calling it again
// returns the same report.
func (m *Monitor) Stop() Report {
	m.mu.Lock()
	var last time.Time
	if n := len(m.gone); n > 0 {
		last = m.gone[n-1].at
	}
	if n := len(m.deletions); n > 0 && m.deletions[n-1].at.After(last) {
		last = m.deletions[n-1].at
	}
	m.mu.Unlock()
	if wait := m.delay - m.clock.Since(last); !last.IsZero() && wait > 0 {
		select {
		case <-m.clock.After(wait):
		case <-m.done:
		}
	}
	m.cancel()
	<-m.done
	m.factory.Shutdown()
	ctx, cancel := context.WithTimeout(m.parent, 30*time.Second)
	defer cancel()
	m.flush(ctx, time.Time{}, true)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.report()
}

// report splits the raw report by the involuntary nodes; m.mu is held.
func (m *Monitor) report() Report {
	r := Report{Evictions: m.raw.Evictions, Unobserved: m.raw.Unobserved, WatchErrors: m.raw.WatchErrors,
		UnobservedPods: slices.Clone(m.raw.UnobservedPods)}
	for _, d := range m.raw.Disruptions {
		if !m.involuntary[d.Node] {
			r.Disruptions = append(r.Disruptions, d)
		}
	}
	for _, v := range m.raw.Violations {
		if v.Node != "" && m.involuntary[v.Node] {
			r.Excused = append(r.Excused, v)
		} else {
			r.Violations = append(r.Violations, v)
		}
	}
	for n := range m.involuntary {
		r.Involuntary = append(r.Involuntary, n)
	}
	slices.Sort(r.Involuntary)
	return r
}

// flushLoop counts the pods of deleted Nodes once their delay has passed.
func (m *Monitor) flushLoop(ctx context.Context) {
	defer close(m.done)
	tick := m.clock.NewTicker(m.delay / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
			m.flush(ctx, m.clock.Now().Add(-m.delay), false)
		}
	}
}

func (m *Monitor) onNode(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nodes[node.Name] = node
	delete(m.removed, node.Name)
}

func (m *Monitor) onNodeDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	delete(m.nodes, node.Name)
	m.removed[node.Name] = now
	m.gone = append(m.gone, goneNode{name: node.Name, at: now})
}

func (m *Monitor) onBudget(obj any, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pdb, ok := obj.(*policyv1.PodDisruptionBudget)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := pdb.Namespace + "/" + pdb.Name
	if deleted {
		delete(m.budgets, key)
		return
	}
	m.budgets[key] = pdb
}
