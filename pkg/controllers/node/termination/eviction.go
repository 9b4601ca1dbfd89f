package termination

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/karp-autoscaler/karp/pkg/scheduling"
)

const (
	// evictionWorkers bounds the evictions in flight.
	evictionWorkers = 16
	// Backoff between refused evictions of one pod.
	evictionBackoffBase = 100 * time.Millisecond
	evictionBackoffMax  = 10 * time.Second
)

// evictionRequest names one pod to evict. The UID makes the request
// specific to that pod: a newer pod with the same name is not affected.
type evictionRequest struct {
	types.NamespacedName
	UID types.UID
}

// Queue evicts pods through the Eviction API, one worker per request at a
// time, retrying refused evictions (a PodDisruptionBudget allows none now)
// with per-pod exponential backoff. With WithRolloutBudgets it also holds
// back, with the same backoff, the eviction of a pod no PDB selects while
// its controller's rollout budget has no room. It holds no state that
// matters across restarts: the node termination controller adds the pods
// still to evict on every pass, and adding a pod already queued is a no-op.
type Queue struct {
	kubeClient client.Client
	recorder   events.EventRecorder
	queue      workqueue.TypedRateLimitingInterface[evictionRequest]
	// rollout gates evictions on rollout budgets; nil when off.
	rollout *rolloutGate

	mu sync.Mutex
	// tracked holds the requests queued or backing off, with the reason
	// that labels karpenter_pods_drained_total, so adding one again (every
	// drain pass does) neither duplicates it nor cuts its backoff short.
	tracked map[evictionRequest]string
}

// NewQueue builds an eviction queue; it evicts once Start runs.
func NewQueue(kubeClient client.Client, recorder events.EventRecorder) *Queue {
	return &Queue{
		kubeClient: kubeClient,
		recorder:   recorder,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[evictionRequest](evictionBackoffBase, evictionBackoffMax),
			workqueue.TypedRateLimitingQueueConfig[evictionRequest]{Name: "eviction-queue"}),
		tracked: map[evictionRequest]string{},
	}
}

// WithRolloutBudgets makes the queue respect the rollout budget of the
// controller of each pod no PodDisruptionBudget selects (a Deployment's,
// ReplicaSet's or StatefulSet's maxUnavailable), read from reader (the
// manager's cache): an eviction that would make more of its replicas
// unavailable waits, with backoff, and the pod gets a FailedDraining
// event naming the budget.
func (q *Queue) WithRolloutBudgets(reader client.Reader) *Queue {
	q.rollout = newRolloutGate(reader)
	return q
}

// Add queues pods for eviction. reason labels the drained-pods metric.
func (q *Queue) Add(reason string, pods ...*corev1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, pod := range pods {
		req := evictionRequest{NamespacedName: client.ObjectKeyFromObject(pod), UID: pod.UID}
		if _, ok := q.tracked[req]; ok {
			continue
		}
		q.tracked[req] = reason
		q.queue.Add(req)
		if why := scheduling.DoNotDisruptInvalid(pod); why != "" {
			q.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonInvalidDoNotDisruptAnnotation, "Evict", "%s",
				scheduling.DoNotDisruptIgnoredMessage(why))
		}
	}
}

// Len is the number of requests waiting for a worker.
func (q *Queue) Len() int { return q.queue.Len() }

// Start runs the workers until ctx ends (manager.Runnable). Only the
// leader evicts.
func (q *Queue) Start(ctx context.Context) error {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("eviction-queue"))
	done := make(chan struct{})
	for range evictionWorkers {
		go func() {
			defer func() { done <- struct{}{} }()
			for q.processNext(ctx) {
			}
		}()
	}
	<-ctx.Done()
	q.queue.ShutDown()
	for range evictionWorkers {
		<-done
	}
	return nil
}

func (q *Queue) processNext(ctx context.Context) bool {
	req, shutdown := q.queue.Get()
	if shutdown {
		return false
	}
	defer q.queue.Done(req)
	if retry := q.evict(ctx, req); retry {
		q.queue.AddRateLimited(req)
		return true
	}
	q.queue.Forget(req)
	q.mu.Lock()
	delete(q.tracked, req)
	q.mu.Unlock()
	return true
}

// evict asks the API server to evict the pod; it reports whether to try
// again later.
func (q *Queue) evict(ctx context.Context, req evictionRequest) bool {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name, UID: req.UID}}
	if q.rollout != nil {
		held, err := q.rollout.admit(ctx, req)
		if err != nil {
			log.FromContext(ctx).Error(err, "reading the rollout budget", "Pod", klog.KObj(pod))
			return true
		}
		if held != "" {
			podsEvictionsHeldTotal.Inc()
			q.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonFailedDraining, "Evict",
				"Failed to evict pod: it would exceed its controller's rollout budget: %s", truncate(held))
			return true
		}
	}
	uid := req.UID
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}},
	}
	err := q.kubeClient.SubResource("eviction").Create(ctx, pod, eviction)
	podsEvictionRequestsTotal.WithLabelValues(strconv.Itoa(statusCode(err))).Inc()
	if err != nil && q.rollout != nil {
		q.rollout.release(req.UID)
	}
	switch {
	case err == nil:
		reason := q.reason(req)
		podsDrainedTotal.WithLabelValues(reason).Inc()
		note := "Evicted pod"
		if reason != "" {
			note += ": " + reason
		}
		q.recorder.Eventf(pod, nil, corev1.EventTypeNormal, ReasonEvicted, "Evict", "%s", note)
		log.FromContext(ctx).V(1).Info("evicted pod", "Pod", klog.KObj(pod))
		return false
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or the name now belongs to a newer pod.
		return false
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace controller is deleting the pod anyway; the drain
		// waits for it (and queues it again if it lingers).
		log.FromContext(ctx).V(1).Info("not evicting pod of a terminating namespace", "Pod", klog.KObj(pod))
		return false
	case apierrors.IsTooManyRequests(err), isMultiplePDBError(err):
		q.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonFailedDraining, "Evict", "Failed to evict pod: %s", truncate(err.Error()))
		return true
	default:
		log.FromContext(ctx).Error(fmt.Errorf("evicting pod: %w", err), "eviction failed", "Pod", klog.KObj(pod))
		return true
	}
}

func (q *Queue) reason(req evictionRequest) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.tracked[req]
}

// isMultiplePDBError matches the API server's refusal to evict a pod that
// more than one PodDisruptionBudget selects; a user may fix the budgets,
// so it is retried like a 429.
func isMultiplePDBError(err error) bool {
	return apierrors.IsInternalError(err) && strings.Contains(err.Error(), "more than one PodDisruptionBudget")
}

func statusCode(err error) int {
	if err == nil {
		return 200
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return int(status.Status().Code)
	}
	return 0
}

func truncate(s string) string {
	const limit = 300
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "..."
}
