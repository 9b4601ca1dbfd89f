package interruption_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/cache"
	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/interruption"
	"github.com/karp-autoscaler/karp/pkg/metrics"
	"github.com/karp-autoscaler/karp/pkg/test"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
	"github.com/karp-autoscaler/karp/pkg/test/operatortest"
)

var h *operatortest.Harness

func TestMain(m *testing.M) { operatortest.Main(m, &h) }

const (
	queueName    = "karp-cluster"
	instanceType = "m5.large"
	zone         = "us-west-2a"
	pool         = "default"
)

// world is the controller over a fake SQS queue and the real
// unavailable-offerings cache, against the harness's API server.
type world struct {
	sqs        *fake.SQS
	sqsClock   *clocktesting.FakeClock
	offerings  *cache.UnavailableOfferings
	controller *interruption.Controller
}

// setup resets the cluster and builds the controller; the queue exists
// when createQueue is set.
func setup(t *testing.T, createQueue bool) *world {
	t.Helper()
	h.Reset(t)
	w := &world{sqsClock: clocktesting.NewFakeClock(h.Clock.Now())}
	w.sqs = fake.NewSQS(w.sqsClock)
	w.offerings = cache.NewUnavailableOfferings(h.Clock)
	w.controller = interruption.NewController(h.Client, w.sqs, queueName, w.offerings, nil, h.Clock, h.Recorder)
	if createQueue {
		w.createQueue(t)
	}
	return w
}

func (w *world) createQueue(t *testing.T) {
	t.Helper()
	if _, err := w.sqs.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(queueName)}); err != nil {
		t.Fatal(err)
	}
}

// send puts EventBridge bodies on the queue.
func (w *world) send(t *testing.T, bodies ...string) {
	t.Helper()
	url, ok := w.sqs.Queue(queueName)
	if !ok {
		t.Fatal("no queue")
	}
	for _, body := range bodies {
		if _, err := w.sqs.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
}

// reconcile runs one pass once the cache has caught up with the API
// server.
func (w *world) reconcile(t *testing.T) (reconcile.Result, error) {
	t.Helper()
	h.Synced(t)
	return w.controller.Reconcile(t.Context())
}

// reconcileEmpty runs one pass on an empty queue: the long poll ends when
// its wait time has passed on the queue's clock.
func (w *world) reconcileEmpty(t *testing.T) (reconcile.Result, error) {
	t.Helper()
	type result struct {
		res reconcile.Result
		err error
	}
	h.Synced(t)
	done := make(chan result, 1)
	go func() {
		res, err := w.controller.Reconcile(t.Context())
		done <- result{res, err}
	}()
	for !w.sqsClock.HasWaiters() {
		select {
		case r := <-done:
			t.Fatalf("the pass returned before its long poll ended: %+v, %v", r.res, r.err)
		case <-time.After(time.Millisecond):
		}
	}
	w.sqsClock.Step(20 * time.Second)
	r := <-done
	return r.res, r.err
}

func instanceID(name string) string { return "i-0" + fmt.Sprintf("%016x", name) }

// launched creates a NodeClaim of capacityType for an instance, and its
// registered Node.
func launched(t *testing.T, name, capacityType string) {
	t.Helper()
	providerID := fmt.Sprintf("aws:///%s/%s", zone, instanceID(name))
	nc := test.MakeNodeClaim(name).NodePool(pool).Finalizers(karpv1.TerminationFinalizer).Labels(map[string]string{
		karpv1.NodePoolLabelKey:        pool,
		corev1.LabelInstanceTypeStable: instanceType,
		corev1.LabelTopologyZone:       zone,
		karpv1.CapacityTypeLabelKey:    capacityType,
	}).Obj()
	h.Registered(t, nc, providerID)
}

// counters are the interruption metrics at one moment; tests compare
// before and after (the counters are process-wide).
type counters struct {
	received  map[interruption.Kind]float64
	deleted   float64
	disrupted map[interruption.Kind]float64
	// queued and queuedSeconds are the queue duration histogram's count
	// and sum.
	queued        uint64
	queuedSeconds float64
}

var allKinds = []interruption.Kind{
	interruption.KindSpotInterrupted, interruption.KindRebalanceRecommendation, interruption.KindScheduledChange,
	interruption.KindInstanceStopped, interruption.KindInstanceTerminated, interruption.KindCapacityReservationInterrupted,
	interruption.KindNoOp, interruption.KindMalformed,
}

func readCounters() counters {
	c := counters{received: map[interruption.Kind]float64{}, disrupted: map[interruption.Kind]float64{}}
	for _, k := range allKinds {
		c.received[k] = testutil.ToFloat64(interruption.ReceivedMessagesTotal.WithLabelValues(string(k)))
		for _, ct := range []string{karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand} {
			c.disrupted[k] += testutil.ToFloat64(metrics.NodeClaimsDisruptedTotal.WithLabelValues(string(k), pool, ct, "", metrics.TerminationModeForceful))
		}
	}
	c.deleted = testutil.ToFloat64(interruption.DeletedMessagesTotal)
	var m dto.Metric
	if err := interruption.MessageQueueDurationSeconds.Write(&m); err == nil {
		c.queued, c.queuedSeconds = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
	}
	return c
}

// since is what the counters grew by from before; zero entries are left
// out.
func (c counters) since(before counters) counters {
	out := counters{received: map[interruption.Kind]float64{}, disrupted: map[interruption.Kind]float64{}, deleted: c.deleted - before.deleted,
		queued: c.queued - before.queued, queuedSeconds: c.queuedSeconds - before.queuedSeconds}
	for k, v := range c.received {
		if d := v - before.received[k]; d != 0 {
			out.received[k] = d
		}
	}
	for k, v := range c.disrupted {
		if d := v - before.disrupted[k]; d != 0 {
			out.disrupted[k] = d
		}
	}
	return out
}

func eventTimeNow() time.Time { return h.Clock.Now().Add(-5 * time.Second) }
