package interruption

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instance"
	"github.com/karp-autoscaler/karp/pkg/conflict"
	"github.com/karp-autoscaler/karp/pkg/singleton"
)

// Polling parameters (upstream's): a long poll of up to 10 messages, each
// hidden for 20 s while it is handled; a message whose handling fails
// reappears after that.
const (
	maxMessages       = 10
	visibilityTimeout = 20 * time.Second
	waitTime          = 20 * time.Second
	// workers handle one batch's messages concurrently.
	workers = 10
)

// Backoff between failed polls (a missing queue, throttling, an outage):
// short at first, never longer than a minute, so handling resumes soon
// after the queue is back.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = time.Minute
)

// SQSAPI is the SQS calls the controller makes.
type SQSAPI interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, opts ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// OfferingMarker remembers offerings that should not be launched for a
// while (the AWS provider's unavailable-offerings cache).
type OfferingMarker interface {
	MarkUnavailable(ctx context.Context, reason, instanceType, zone, capacityType string)
}

// ReservationMarker treats capacity reservations as full (the AWS
// provider's capacity reservation provider).
type ReservationMarker interface {
	MarkUnavailable(ids ...string)
}

// Controller polls the interruption queue and acts on each message.
type Controller struct {
	*Handler
	sqs       SQSAPI
	queueName string

	mu       sync.Mutex
	queueURL string
}

// NewController builds the controller for the queue named queueName.
// reservations may be nil (capacity reservations disabled).
func NewController(kubeClient client.Client, api SQSAPI, queueName string, offerings OfferingMarker, reservations ReservationMarker,
	clk clock.Clock, recorder events.EventRecorder) *Controller {
	return &Controller{Handler: NewHandler(kubeClient, offerings, reservations, clk, recorder), sqs: api, queueName: queueName}
}

// ReplaceFirst makes a spot interruption warning whose first half holds
// twice the pool's observed launch time mark the NodeClaim to be replaced
// before it is deleted (half way through the notice at the latest; the
// drain keeps the other half) instead of deleting it at once
// (--replace-first).
func (c *Controller) ReplaceFirst(on bool) { c.replaceFirst = on }

// Name is the controller's name (upstream's).
func (c *Controller) Name() string { return "interruption" }

// Register registers the metrics and runs the loop as a singleton on the
// leader (controllers run only on the leader).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	if err := RegisterMetrics(crmetrics.Registry); err != nil {
		return fmt.Errorf("registering interruption metrics: %w", err)
	}
	err := builder.ControllerManagedBy(mgr).Named(c.Name()).WatchesRawSource(singleton.Source(c.queueName)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: 1,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](minBackoff, maxBackoff),
		}).
		Complete(conflict.Requeue(reconcile.Func(func(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
			return c.Reconcile(ctx)
		})))
	if err != nil {
		return fmt.Errorf("registering interruption controller: %w", err)
	}
	return nil
}

// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile receives one batch of messages (a long poll), handles them
// concurrently and deletes each one handled. It asks to run again at once;
// a failed poll or handling returns the error (the controller backs off,
// and the messages not deleted reappear after their visibility timeout).
func (c *Controller) Reconcile(ctx context.Context) (reconcile.Result, error) {
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("queue", c.queueName))
	// 1. Receive.
	url, err := c.resolveQueueURL(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	out, err := c.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    &url,
		MaxNumberOfMessages:         maxMessages,
		VisibilityTimeout:           int32(visibilityTimeout.Seconds()),
		WaitTimeSeconds:             int32(waitTime.Seconds()),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil && ctx.Err() != nil {
		// Shutting down or no longer the leader, mid-poll: not a failure.
		return reconcile.Result{}, nil
	}
	if err != nil {
		if errors.As(err, new(*sqstypes.QueueDoesNotExist)) {
			c.forgetQueueURL()
		}
		return reconcile.Result{}, fmt.Errorf("receiving from interruption queue %q: %w", c.queueName, err)
	}
	if len(out.Messages) == 0 {
		return reconcile.Result{RequeueAfter: time.Nanosecond}, nil
	}
	// 2. Gather the NodeClaims and Nodes by instance ID.
	owned, err := c.gather(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	// 3. Handle and delete each message.
	errs := make([]error, len(out.Messages))
	workqueue.ParallelizeUntil(ctx, workers, len(out.Messages), func(i int) {
		errs[i] = c.process(ctx, url, out.Messages[i], owned)
	})
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: time.Nanosecond}, nil
}

// process parses, handles and deletes one message. A malformed message is
// logged, counted and deleted: it would never parse on a later receive.
func (c *Controller) process(ctx context.Context, url string, raw sqstypes.Message, owned *cluster) error {
	body := ""
	if raw.Body != nil {
		body = *raw.Body
	}
	msg, err := ParseMessage(body)
	if err != nil {
		log.FromContext(ctx).Error(err, "ignoring malformed interruption message", "messageID", deref(raw.MessageId))
		ReceivedMessagesTotal.WithLabelValues(string(KindMalformed)).Inc()
		return c.deleteMessage(ctx, url, raw)
	}
	ReceivedMessagesTotal.WithLabelValues(string(msg.Kind)).Inc()
	if msg.Kind == KindNoOp {
		log.FromContext(ctx).V(1).Info("ignoring interruption message", "messageID", deref(raw.MessageId), "event", msg.ID)
	}
	if err := c.handle(ctx, msg, owned); err != nil {
		return fmt.Errorf("handling %s message %q: %w", msg.Kind, msg.ID, err)
	}
	MessageQueueDurationSeconds.Observe(c.clock.Since(c.started(msg, raw)).Seconds())
	return c.deleteMessage(ctx, url, raw)
}

// started is when the event happened: its EventBridge time, else when it
// was sent to the queue, else now.
func (c *Controller) started(msg Message, raw sqstypes.Message) time.Time {
	if !msg.Time.IsZero() {
		return msg.Time
	}
	if ms, err := strconv.ParseInt(raw.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
		return time.UnixMilli(ms)
	}
	return c.clock.Now()
}

func (c *Controller) deleteMessage(ctx context.Context, url string, raw sqstypes.Message) error {
	if _, err := c.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: raw.ReceiptHandle}); err != nil {
		return fmt.Errorf("deleting interruption message %q: %w", deref(raw.MessageId), err)
	}
	DeletedMessagesTotal.Inc()
	return nil
}

// resolveQueueURL returns the queue's URL, looking it up the first time
// and after the queue was found missing.
func (c *Controller) resolveQueueURL(ctx context.Context) (string, error) {
	c.mu.Lock()
	url := c.queueURL
	c.mu.Unlock()
	if url != "" {
		return url, nil
	}
	out, err := c.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &c.queueName})
	if err != nil {
		return "", fmt.Errorf("looking up interruption queue %q (--interruption-queue): %w", c.queueName, err)
	}
	url = deref(out.QueueUrl)
	c.mu.Lock()
	c.queueURL = url
	c.mu.Unlock()
	log.FromContext(ctx).Info("watching interruption queue", "queueURL", url)
	return url, nil
}

func (c *Controller) forgetQueueURL() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queueURL = ""
}

// cluster holds the NodeClaims and Nodes by the instance ID of their
// providerID; it is read-only while messages are handled.
type cluster struct {
	nodeClaims map[string]*karpv1.NodeClaim
	nodes      map[string]*corev1.Node
}

func (c *Handler) gather(ctx context.Context) (*cluster, error) {
	owned := &cluster{nodeClaims: map[string]*karpv1.NodeClaim{}, nodes: map[string]*corev1.Node{}}
	var nodeClaims karpv1.NodeClaimList
	if err := c.kubeClient.List(ctx, &nodeClaims); err != nil {
		return nil, fmt.Errorf("listing nodeclaims: %w", err)
	}
	for i := range nodeClaims.Items {
		if id, err := instance.ParseProviderID(nodeClaims.Items[i].Status.ProviderID); err == nil {
			owned.nodeClaims[id] = &nodeClaims.Items[i]
		}
	}
	var nodes corev1.NodeList
	if err := c.kubeClient.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	for i := range nodes.Items {
		if id, err := instance.ParseProviderID(nodes.Items[i].Spec.ProviderID); err == nil {
			owned.nodes[id] = &nodes.Items[i]
		}
	}
	return owned, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
