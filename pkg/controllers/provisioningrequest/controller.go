package provisioningrequest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1 "github.com/karp-autoscaler/karp/pkg/apis/autoscaling/v1"
	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/simulation"
	"github.com/karp-autoscaler/karp/pkg/state"
	"github.com/karp-autoscaler/karp/pkg/state/buffers"
)

// Labels and annotations karp puts on the NodeClaims of an atomic request.
const (
	// RequestUIDLabelKey holds the request's UID.
	RequestUIDLabelKey = karpv1.Group + "/provisioning-request-uid"
	// RequestAnnotationKey holds the request's namespace/name.
	RequestAnnotationKey = karpv1.Group + "/provisioning-request"
	// LaunchSizeAnnotationKey holds how many NodeClaims were created together.
	LaunchSizeAnnotationKey = karpv1.Group + "/provisioning-request-nodeclaims"
	// PodCountAnnotationKey holds how many pods the request asked for; the
	// booking holds its NodeClaims' room until that many consuming pods
	// are on nodes.
	PodCountAnnotationKey = karpv1.Group + "/provisioning-request-pods"
	// BookedAnnotationKey is "true" while karp holds the NodeClaim with
	// karpenter.sh/do-not-disrupt for the request's booking.
	BookedAnnotationKey = karpv1.Group + "/provisioning-request-booked"
)

// Requeue periods: retryPeriod between attempts at a request that does not
// fit (Cluster Autoscaler retries on every loop, with backoff);
// waitPeriod while NodeClaims launch or go; templateGrace is how long a
// missing PodTemplate is waited for (Kueue creates it with the request)
// before the request fails.
const (
	retryPeriod   = 30 * time.Second
	waitPeriod    = 5 * time.Second
	templateGrace = time.Minute
)

// Controller serves ProvisioningRequests.
type Controller struct {
	kubeClient    client.Client
	apiReader     client.Reader
	cloudProvider cloudprovider.CloudProvider
	cluster       *state.Cluster
	clock         clock.Clock
	recorder      events.EventRecorder
	opts          Options

	// bookings, when set (the provisioner and disruption read them), hold
	// the room of each Provisioned request for its pods until they arrive
	// or the booking ends.
	bookings *buffers.Bookings

	mu sync.Mutex
	// notBefore holds back the next scale-up attempt of a request after a
	// roll-back (its NodeClaims' deletions would otherwise trigger one at
	// once).
	notBefore map[types.UID]time.Time
}

// Options are the solver settings and limits the provisioner uses, and
// the booking period.
type Options struct {
	Solver        simulation.Options
	ClusterLimits corev1.ResourceList
	// BookingPeriod: DefaultBookingPeriod when zero.
	BookingPeriod time.Duration
}

var _ reconcile.Reconciler = (*Controller)(nil)

// NewController builds the controller over the cluster state the
// provisioner and the disruption controller share. apiReader reads the
// request's NodeClaims straight from the API server, since counting them
// from a lagging cache would roll back a launch that just happened.
func NewController(kubeClient client.Client, apiReader client.Reader, cloudProvider cloudprovider.CloudProvider,
	cluster *state.Cluster, clk clock.Clock, recorder events.EventRecorder, opts Options) *Controller {
	if opts.BookingPeriod <= 0 {
		opts.BookingPeriod = DefaultBookingPeriod
	}
	return &Controller{kubeClient: kubeClient, apiReader: apiReader, cloudProvider: cloudProvider, cluster: cluster,
		clock: clk, recorder: recorder, opts: opts, notBefore: map[types.UID]time.Time{}}
}

// WithBookings makes the controller book, in bookings, the capacity of each
// request it finds or launches, for the booking period: the provisioner and
// disruption keep that room for the request's pods, and other requests'
// solves do not count on it.
func (c *Controller) WithBookings(bookings *buffers.Bookings) *Controller {
	c.bookings = bookings
	return c
}

// Name is the controller's name.
func (c *Controller) Name() string { return "provisioningrequest" }

// Register watches ProvisioningRequests and the NodeClaims launched for them.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		Named(c.Name()).
		For(&autoscalingv1.ProvisioningRequest{}).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(byRequestAnnotation)).
		Complete(conflict.Requeue(c))
}

func byRequestAnnotation(_ context.Context, o client.Object) []reconcile.Request {
	key, ok := parseKey(o.GetAnnotations()[RequestAnnotationKey])
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

func parseKey(s string) (types.NamespacedName, bool) {
	namespace, name, ok := strings.Cut(s, "/")
	return types.NamespacedName{Namespace: namespace, Name: name}, ok && namespace != "" && name != ""
}

// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=provisioningrequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling.x-k8s.io,resources=provisioningrequests/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=podtemplates,verbs=get
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile decides the request's next step from its conditions and
// NodeClaims, carries it out and records the outcome in its conditions.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pr := &autoscalingv1.ProvisioningRequest{}
	if err := c.kubeClient.Get(ctx, req.NamespacedName, pr); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("getting provisioningrequest: %w", err)
		}
		// Deleted: its NodeClaims become ordinary capacity.
		c.unbookRequest(req.NamespacedName)
		return reconcile.Result{}, c.release(ctx, req.NamespacedName, "")
	}
	if !pr.DeletionTimestamp.IsZero() {
		c.unbookRequest(req.NamespacedName)
		return reconcile.Result{}, c.release(ctx, req.NamespacedName, "")
	}
	// 1. Observe.
	obs := observation{class: pr.Spec.ProvisioningClassName, conditions: pr.Status.Conditions,
		created: pr.CreationTimestamp.Time, validUntil: validUntil(pr.Spec.Parameters)}
	var owned []karpv1.NodeClaim
	if obs.class == autoscalingv1.ProvisioningClassBestEffortAtomicScaleUp {
		var err error
		if owned, obs.claims, err = c.claimsOf(ctx, pr); err != nil {
			return reconcile.Result{}, err
		}
	}
	// 2. Decide.
	now := c.clock.Now()
	next, left := decide(obs, now, c.opts.BookingPeriod)
	if next == stepIgnore {
		return reconcile.Result{}, nil
	}
	stored := pr.DeepCopy()
	c.set(pr, autoscalingv1.Accepted, metav1.ConditionTrue, ReasonAccepted, "Provisioning Request was accepted")
	// 3. Act.
	res, err := c.act(ctx, pr, next, left, owned)
	// 4. Record.
	if perr := c.patchStatus(ctx, stored, pr); perr != nil {
		err = errors.Join(err, perr)
	}
	if err != nil {
		// Retried with backoff; a requeue beside an error is dropped.
		return reconcile.Result{}, err
	}
	return res, nil
}

// act carries out one step, setting the request's conditions in memory.
func (c *Controller) act(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, next step, left time.Duration,
	owned []karpv1.NodeClaim) (reconcile.Result, error) {
	key := client.ObjectKeyFromObject(pr)
	switch next {
	case stepRelease:
		c.unbookRequest(key)
		return reconcile.Result{}, c.release(ctx, key, pr.UID)
	case stepExpireBooking:
		c.set(pr, autoscalingv1.BookingExpired, metav1.ConditionTrue, ReasonBookingExpired, "Capacity booking expired")
		c.event(pr, corev1.EventTypeNormal, ReasonBookingExpired, "the booking period (%s) passed", c.opts.BookingPeriod)
		c.unbookRequest(key)
		return reconcile.Result{}, c.release(ctx, key, pr.UID)
	case stepHold:
		// After a restart the booking is made again from the request.
		if c.bookings != nil && !c.bookings.Has(key) {
			if err := c.rebook(ctx, pr, len(owned) > 0); err != nil {
				return reconcile.Result{}, err
			}
		}
		return reconcile.Result{RequeueAfter: left}, nil
	case stepFail:
		c.fail(pr, ReasonExpired, fmt.Sprintf("not provisioned within ValidUntilSeconds (%s)", validUntil(pr.Spec.Parameters)))
		return reconcile.Result{}, nil
	case stepRollback:
		return c.rollback(ctx, pr, owned)
	case stepWait:
		return reconcile.Result{RequeueAfter: waitPeriod}, nil
	case stepProvisioned:
		if err := c.rebook(ctx, pr, true); err != nil {
			return reconcile.Result{}, err
		}
		c.provisioned(pr, ReasonCapacityIsProvisioned, fmt.Sprintf("%d NodeClaim(s) launched for the request", len(owned)))
		return reconcile.Result{RequeueAfter: c.opts.BookingPeriod}, nil
	case stepCheck, stepScaleUp:
		return c.solveAndAct(ctx, pr, next)
	}
	return reconcile.Result{}, nil
}

// solveAndAct solves the request's pods and, for the atomic class, launches
// everything or nothing.
func (c *Controller) solveAndAct(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, next step) (reconcile.Result, error) {
	if next == stepScaleUp {
		if wait := c.backoff(pr.UID); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	synced, err := c.cluster.Synced(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !synced {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	pods, missing, err := c.pods(ctx, pr)
	if err != nil {
		return reconcile.Result{}, err
	}
	if missing != "" {
		if c.clock.Since(pr.CreationTimestamp.Time) < templateGrace {
			return reconcile.Result{RequeueAfter: waitPeriod}, nil
		}
		c.fail(pr, ReasonFailedToCreatePods, fmt.Sprintf("PodTemplate %s/%s not found", pr.Namespace, missing))
		return reconcile.Result{}, nil
	}
	v, err := c.solve(ctx, pr, pods, next == stepScaleUp)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !v.fits {
		c.notFound(pr, v.message)
		return reconcile.Result{RequeueAfter: retryPeriod}, nil
	}
	if next == stepCheck {
		decisions.WithLabelValues(classLabel(pr), ReasonCapacityIsFound).Inc()
		c.book(pr, pods, false)
		c.provisioned(pr, ReasonCapacityIsFound, "Capacity is found in the cluster: "+v.message)
		return reconcile.Result{RequeueAfter: c.opts.BookingPeriod}, nil
	}
	if len(v.launch) == 0 {
		decisions.WithLabelValues(classLabel(pr), ReasonCapacityIsProvisioned).Inc()
		c.book(pr, pods, false)
		c.provisioned(pr, ReasonCapacityIsProvisioned, "Capacity is found in the cluster: "+v.message)
		return reconcile.Result{RequeueAfter: c.opts.BookingPeriod}, nil
	}
	decisions.WithLabelValues(classLabel(pr), ReasonCapacityIsBeingProvisioned).Inc()
	if err := c.launch(ctx, pr, v.launch, len(pods)); err != nil {
		return reconcile.Result{}, err
	}
	c.set(pr, autoscalingv1.Provisioned, metav1.ConditionFalse, ReasonCapacityIsBeingProvisioned,
		fmt.Sprintf("launching %d NodeClaim(s) for the request: %s", len(v.launch), v.message))
	return reconcile.Result{RequeueAfter: waitPeriod}, nil
}

func (c *Controller) backoff(uid types.UID) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.notBefore[uid]
	if !ok {
		return 0
	}
	if wait := at.Sub(c.clock.Now()); wait > 0 {
		return wait
	}
	delete(c.notBefore, uid)
	return 0
}

func (c *Controller) holdBack(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notBefore[uid] = c.clock.Now().Add(retryPeriod)
}

// provisioned sets Provisioned=True (the booking starts; the caller
// requeues at its end) and says so.
func (c *Controller) provisioned(pr *autoscalingv1.ProvisioningRequest, reason, message string) {
	if !meta.IsStatusConditionTrue(pr.Status.Conditions, autoscalingv1.Provisioned) {
		c.event(pr, corev1.EventTypeNormal, reason, "%s", message)
	}
	c.set(pr, autoscalingv1.Provisioned, metav1.ConditionTrue, reason, message)
}

// notFound sets Provisioned=False: the pods do not fit; retried.
func (c *Controller) notFound(pr *autoscalingv1.ProvisioningRequest, message string) {
	decisions.WithLabelValues(classLabel(pr), ReasonCapacityIsNotFound).Inc()
	if cur := meta.FindStatusCondition(pr.Status.Conditions, autoscalingv1.Provisioned); cur == nil || cur.Message != message {
		c.event(pr, corev1.EventTypeWarning, ReasonCapacityIsNotFound, "%s", message)
	}
	c.set(pr, autoscalingv1.Provisioned, metav1.ConditionFalse, ReasonCapacityIsNotFound,
		"Capacity is not found, karp will try to find it later: "+message)
}

// fail sets Failed=True (terminal).
func (c *Controller) fail(pr *autoscalingv1.ProvisioningRequest, reason, message string) {
	decisions.WithLabelValues(classLabel(pr), reason).Inc()
	c.event(pr, corev1.EventTypeWarning, reason, "%s", message)
	c.set(pr, autoscalingv1.Failed, metav1.ConditionTrue, reason, message)
}

func (c *Controller) set(pr *autoscalingv1.ProvisioningRequest, t string, status metav1.ConditionStatus, reason, message string) {
	if len(message) > 32768 {
		message = message[:32768]
	}
	cond := metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: pr.Generation,
		LastTransitionTime: metav1.NewTime(c.clock.Now())}
	meta.SetStatusCondition(&pr.Status.Conditions, cond)
}

func (c *Controller) event(pr *autoscalingv1.ProvisioningRequest, eventType, reason, format string, args ...any) {
	if c.recorder == nil {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	c.recorder.Eventf(pr, nil, eventType, reason, "Provision", "%s", msg)
}

// patchStatus patches the request's status when it changed.
func (c *Controller) patchStatus(ctx context.Context, stored, pr *autoscalingv1.ProvisioningRequest) error {
	if equality.Semantic.DeepEqual(stored.Status, pr.Status) {
		return nil
	}
	if err := c.kubeClient.Status().Patch(ctx, pr, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("patching provisioningrequest status: %w", err))
	}
	return nil
}

func classLabel(pr *autoscalingv1.ProvisioningRequest) string { return pr.Spec.ProvisioningClassName }

// book holds the room of the request's pods for its booking period (see
// WithBookings); onNodeClaims says the request launched NodeClaims of its
// own for them.
func (c *Controller) book(pr *autoscalingv1.ProvisioningRequest, pods []*corev1.Pod, onNodeClaims bool) {
	if c.bookings != nil {
		c.bookings.Set(buffers.Booking{Key: client.ObjectKeyFromObject(pr), Pods: pods, OnNodeClaims: onNodeClaims})
	}
}

// rebook books the request from its PodTemplates (a request provisioned
// before a restart, or by its NodeClaims launching); a template gone since
// books nothing.
func (c *Controller) rebook(ctx context.Context, pr *autoscalingv1.ProvisioningRequest, onNodeClaims bool) error {
	if c.bookings == nil {
		return nil
	}
	pods, missing, err := c.pods(ctx, pr)
	if err != nil || missing != "" {
		return err
	}
	c.book(pr, pods, onNodeClaims)
	return nil
}

// unbookRequest lets the request's booked room go.
func (c *Controller) unbookRequest(key types.NamespacedName) {
	if c.bookings != nil {
		c.bookings.Delete(key)
	}
}
