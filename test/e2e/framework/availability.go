package framework

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// Availability watches the pods of one namespace and follows, per app
// (the pods' "app" label: one Deployment or StatefulSet each), how many
// are available (Running, Ready, not being deleted) from moment to moment,
// as the PDB monitor follows evictions: the lowest count since the window
// began, and for each pod created in the window (the ReplicaSet's answer
// to an eviction) when it was bound and when it became Ready.
type Availability struct {
	mu        sync.Mutex
	pods      map[types.UID]*podTrack
	available map[string]int
	lowest    map[string]int
	since     time.Time
}

// podTrack is what the monitor knows of one pod.
type podTrack struct {
	name, app, node         string
	available               bool
	created, bound, readyAt time.Time
}

// NewPod is a pod created in the window: when it was created, bound to a
// node and became Ready (zero while not yet).
type NewPod struct {
	Name, App, Node       string
	Created, Bound, Ready time.Time
}

// WatchAvailability starts watching namespace's pods; the window begins
// now (Reset begins a new one). The watch ends with the test.
func WatchAvailability(t testing.TB, f *Framework, namespace string) *Availability {
	t.Helper()
	a := &Availability{pods: map[types.UID]*podTrack{}, available: map[string]int{}}
	var list corev1.PodList
	ListAndWatch(t, f, &list, func() {
		for i := range list.Items {
			a.observe(&list.Items[i], false)
		}
		a.Reset()
	}, func(ev watch.Event) {
		if pod, isPod := ev.Object.(*corev1.Pod); isPod {
			a.observe(pod, ev.Type == watch.Deleted)
		}
	}, client.InNamespace(namespace))
	return a
}

// observe records a pod's new state.
func (a *Availability) observe(pod *corev1.Pod, deleted bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	tr := a.pods[pod.UID]
	if tr == nil {
		tr = &podTrack{name: pod.Name, app: pod.Labels["app"], created: pod.CreationTimestamp.Time}
		a.pods[pod.UID] = tr
	}
	now := time.Now()
	if tr.node == "" && pod.Spec.NodeName != "" {
		tr.node, tr.bound = pod.Spec.NodeName, now
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
				tr.bound = c.LastTransitionTime.Time
			}
		}
	}
	avail := !deleted && Available(pod)
	if avail && tr.readyAt.IsZero() {
		tr.readyAt = now
	}
	if avail != tr.available && tr.app != "" {
		if avail {
			a.available[tr.app]++
		} else {
			a.available[tr.app]--
		}
		if a.lowest != nil && a.available[tr.app] < a.lowest[tr.app] {
			a.lowest[tr.app] = a.available[tr.app]
		}
	}
	tr.available = avail
	if deleted {
		delete(a.pods, pod.UID)
	}
}

// Reset begins a new window: the lowest counts start from the current
// ones, and only pods created from now on are new.
func (a *Availability) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lowest = map[string]int{}
	for app, n := range a.available {
		a.lowest[app] = n
	}
	a.since = time.Now()
}

// Available is the app's available pods now.
func (a *Availability) Available(app string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.available[app]
}

// Lowest is the fewest available pods the app had at any moment of the
// window.
func (a *Availability) Lowest(app string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lowest[app]
}

// NewPods are the pods created in the window, oldest first.
func (a *Availability) NewPods() []NewPod {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []NewPod
	for _, tr := range a.pods {
		if tr.created.Before(a.since.Truncate(time.Second)) {
			continue
		}
		out = append(out, NewPod{Name: tr.name, App: tr.app, Node: tr.node, Created: tr.created, Bound: tr.bound, Ready: tr.readyAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// LongestWait is the longest a pod created in the window waited from its
// creation until Ready (until now for one not Ready yet): how long an
// evicted pod's replacement kept its app one pod short.
func (a *Availability) LongestWait() time.Duration {
	var longest time.Duration
	for _, p := range a.NewPods() {
		end := p.Ready
		if end.IsZero() {
			end = time.Now()
		}
		longest = max(longest, end.Sub(p.Created))
	}
	return longest
}

// Summary is one line per app: available now, lowest in the window; then
// the new pods and the longest wait.
func (a *Availability) Summary() string {
	a.mu.Lock()
	apps := make([]string, 0, len(a.available))
	for app := range a.available {
		apps = append(apps, app)
	}
	a.mu.Unlock()
	slices.Sort(apps)
	var b strings.Builder
	for _, app := range apps {
		fmt.Fprintf(&b, "%s: %d available, lowest %d; ", app, a.Available(app), a.Lowest(app))
	}
	fmt.Fprintf(&b, "%d new pods, longest wait to Ready %s", len(a.NewPods()), a.LongestWait().Round(100*time.Millisecond))
	return b.String()
}

// WaitedForLaunch lists the pods created in the window whose node's
// NodeClaim (of the pool) initialized after the pod was created: pods that
// waited for a node to launch instead of landing on capacity that was
// ready before they needed it (timestamps are whole seconds on both
// sides).
func (a *Availability) WaitedForLaunch(ctx context.Context, cl client.Client, pool string) []string {
	initialized := map[string]time.Time{}
	for _, nc := range PoolNodeClaimsByName(ctx, cl, pool) {
		if c := nc.StatusConditions().Get(karpv1.ConditionTypeInitialized); c != nil && nc.Status.NodeName != "" {
			initialized[nc.Status.NodeName] = c.LastTransitionTime.Time
		}
	}
	var late []string
	for _, p := range a.NewPods() {
		at, ok := initialized[p.Node]
		if !ok || p.Created.Before(at) {
			late = append(late, fmt.Sprintf("%s (created %s, node %q initialized %s)", p.Name,
				p.Created.Format(time.TimeOnly), p.Node, at.Format(time.TimeOnly)))
		}
	}
	return late
}
