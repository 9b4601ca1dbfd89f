package hint

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karp-autoscaler/karp/pkg/state"
)

// hintWorkers bounds concurrent pod status patches.
const hintWorkers = 16

// Hint is a pod and the node it was planned for.
type Hint struct {
	Pod  *corev1.Pod
	Node string
	// from is the resourceVersion of the cached copy the hint is written
	// over.
	from string
}

// WriteConfirmed writes each hint a pod does not carry yet and returns how
// many it wrote. With apiReader it confirms the hints against the API
// server first (see staleHints). When that read fails it writes all the
// same, on the cache's word, and returns the read's error with the count:
// a missing hint costs the plan, while a caller waiting on the hints (the
// batch hold) would cost its pods more.
func WriteConfirmed(ctx context.Context, kubeClient client.Client, apiReader client.Reader, hints []Hint) (int, error) {
	var versions map[types.UID]string
	var err error
	if apiReader != nil && len(hints) > 0 {
		versions, err = unboundPodVersions(ctx, apiReader, hints)
	}
	return patchHints(ctx, kubeClient, staleHints(ctx, kubeClient, hints, versions)), err
}

// hintLedger remembers the hints karp wrote that the informer cache may
// not show yet: per pod UID, the node and the resourceVersion of the
// cached copy the hint was written over. While the cache still holds that
// copy, the hint stands (the write's watch event is on its way); once the
// cache has a newer copy without the hint, the scheduler cleared it. In a
// large scale-up the pod watch runs seconds behind, and the lift used to
// write again, on its critical path, hundreds of hints registration had
// written a few seconds before.
type hintLedger struct {
	mu      sync.Mutex
	written map[types.UID]writtenHint
}

// writtenHint is a hint karp wrote: the node, the resourceVersion of the
// cached copy it was written over (from) and the one the write made (to).
type writtenHint struct{ node, from, to string }

// maxLedger bounds the ledger: past it, it starts over (at worst a hint
// is written twice).
const maxLedger = 10000

var hintsWritten = &hintLedger{written: map[types.UID]writtenHint{}}

// pending reports whether karp wrote this hint over exactly this cached
// copy of the pod; any other copy drops the entry.
func (l *hintLedger) pending(pod *corev1.Pod, node string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.written[pod.UID]
	if !ok {
		return false
	}
	if w.from == pod.ResourceVersion && w.node == node {
		return true
	}
	delete(l.written, pod.UID)
	return false
}

// madeVersion is the resourceVersion karp's own write of this hint gave
// the pod, if the ledger has it.
func (l *hintLedger) madeVersion(uid types.UID, node string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.written[uid]; ok && w.node == node {
		return w.to
	}
	return ""
}

func (l *hintLedger) record(uid types.UID, h writtenHint) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.written) >= maxLedger {
		l.written = map[types.UID]writtenHint{}
	}
	l.written[uid] = h
}

func (l *hintLedger) forget(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.written, uid)
}

// writeHints writes each hint a pod does not carry yet, in parallel, and
// returns how many it wrote.
func writeHints(ctx context.Context, kubeClient client.Client, hints []Hint) int {
	return patchHints(ctx, kubeClient, staleHints(ctx, kubeClient, hints, nil))
}

// staleHints returns the hints to write: those whose pod, as the client
// (the informer cache) has it now, does not carry the hint and was not
// hinted by karp in a write the cache has not caught up with. With
// versions (each unbound pod's resourceVersion on the API server, see
// unboundPodVersions), the API server decides instead: a hint is written
// unless the pod there is as karp's own hint write left it, or as the
// cache has it, hinted. The scheduler clears a pod's hint whenever it
// tries the pod on a held node, and during a large scale-up the pod watch
// runs behind: the cache can still show a hint cleared moments ago.
func staleHints(ctx context.Context, kubeClient client.Client, hints []Hint, versions map[types.UID]string) []Hint {
	stale := make([]Hint, 0, len(hints))
	for _, h := range hints {
		// The state's copy may predate the update that cleared the hint:
		// read the pod as the client (the informer cache) has it now.
		pod := h.Pod
		current := &corev1.Pod{}
		if err := kubeClient.Get(ctx, client.ObjectKeyFromObject(pod), current, &client.GetOptions{UnsafeDisableDeepCopy: ptr.To(true)}); err == nil {
			pod = current
		} else if apierrors.IsNotFound(err) {
			hintsWritten.forget(pod.UID)
			continue
		}
		// Bound, or nominated by the scheduler itself (preemption), which
		// a hint must not overwrite.
		if pod.Spec.NodeName != "" || pod.Status.NominatedNodeName != "" && pod.Status.NominatedNodeName != h.Node && !state.IsSchedulerHint(pod) {
			hintsWritten.forget(pod.UID)
			continue
		}
		if versions != nil {
			version, ok := versions[pod.UID]
			switch {
			case !ok:
				continue // bound or gone on the API server
			case version == hintsWritten.madeVersion(pod.UID, h.Node):
				continue // as karp's own hint write left it
			case version == pod.ResourceVersion && pod.Status.NominatedNodeName == h.Node:
				continue // the cache is current, and hinted
			}
		} else if pod.Status.NominatedNodeName == h.Node || hintsWritten.pending(pod, h.Node) {
			// Already hinted, or hinted by karp in a write the cache has
			// not caught up with.
			continue
		}
		h.from = pod.ResourceVersion
		stale = append(stale, h)
	}
	return stale
}

// unboundPodVersions lists the unbound pods' metadata from the API server
// (in the hints' namespace when they share one) and returns each one's
// resourceVersion by UID.
func unboundPodVersions(ctx context.Context, reader client.Reader, hints []Hint) (map[types.UID]string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	opts := []client.ListOption{client.MatchingFields{"spec.nodeName": ""}}
	if ns := hints[0].Pod.Namespace; !slices.ContainsFunc(hints, func(h Hint) bool { return h.Pod.Namespace != ns }) {
		opts = append(opts, client.InNamespace(ns))
	}
	if err := reader.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing unbound pods to confirm scheduler hints: %w", err)
	}
	versions := make(map[types.UID]string, len(list.Items))
	for i := range list.Items {
		versions[list.Items[i].UID] = list.Items[i].ResourceVersion
	}
	return versions, nil
}

// patchHints writes each hint, in parallel, and returns how many it wrote.
func patchHints(ctx context.Context, kubeClient client.Client, hints []Hint) int {
	if len(hints) == 0 {
		return 0
	}
	now := metav1.Now()
	// One patch body per node.
	patches := map[string][]byte{}
	for _, h := range hints {
		if _, ok := patches[h.Node]; ok {
			continue
		}
		// A strategic merge patch: conditions merge by type, so the
		// scheduler's PodScheduled condition stays.
		raw, err := json.Marshal(map[string]any{"status": map[string]any{
			"nominatedNodeName": h.Node,
			"conditions": []corev1.PodCondition{{
				Type:               state.SchedulerHintCondition,
				Status:             corev1.ConditionTrue,
				Reason:             "Provisioned",
				Message:            state.SchedulerHintMessage(h.Node),
				LastTransitionTime: now,
			}},
		}})
		if err != nil {
			return 0
		}
		patches[h.Node] = raw
	}
	workqueue.ParallelizeUntil(ctx, hintWorkers, len(hints), func(i int) {
		h := hints[i]
		raw := patches[h.Node]
		// Metadata only: the API server answers with the pod's metadata
		// instead of the whole pod, which karp would decode and drop.
		pod := &metav1.PartialObjectMetadata{}
		pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		pod.Namespace, pod.Name = h.Pod.Namespace, h.Pod.Name
		err := kubeClient.Status().Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, raw))
		if err == nil {
			hintsWritten.record(h.Pod.UID, writtenHint{node: h.Node, from: h.from, to: pod.ResourceVersion})
		} else if client.IgnoreNotFound(err) != nil {
			log.FromContext(ctx).V(1).Info("writing scheduler hint", "pod", client.ObjectKeyFromObject(pod), "node", h.Node, "error", err.Error())
		}
	})
	return len(hints)
}
