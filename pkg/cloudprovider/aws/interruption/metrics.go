package interruption

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/karp-autoscaler/karp/pkg/metrics"
)

// interruptionSubsystem names the interruption metrics (upstream's).
const interruptionSubsystem = "interruption"

// messageTypeLabel is the message kind (upstream's label name).
const messageTypeLabel = "message_type"

// categoryLabel is the status check category of an unhealthy instance
// (upstream's label name): InstanceStatus, SystemStatus or EventStatus.
const categoryLabel = "category"

var (
	// ReceivedMessagesTotal counts the messages received from the queue,
	// by kind (KindMalformed for bodies that did not parse).
	ReceivedMessagesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: interruptionSubsystem, Name: "received_messages_total",
		Help: "Count of messages received from the SQS queue. Broken down by message type.",
	}, []string{messageTypeLabel})
	// DeletedMessagesTotal counts the messages deleted from the queue.
	DeletedMessagesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: interruptionSubsystem, Name: "deleted_messages_total",
		Help: "Count of messages deleted from the SQS queue.",
	})
	// MessageQueueDurationSeconds is how long after its event a message was
	// handled.
	MessageQueueDurationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: metrics.Namespace, Subsystem: interruptionSubsystem, Name: "message_queue_duration_seconds",
		Help:    "Amount of time an interruption message is on the queue before it is processed by karpenter.",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600},
	})
	// InstanceStatusUnhealthyTotal counts the instances of the cluster the
	// instance status poll found unhealthy, once per instance and category
	// while it stays unhealthy.
	InstanceStatusUnhealthyTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metrics.Namespace, Subsystem: interruptionSubsystem, Name: "instance_status_unhealthy_total",
		Help: "Count of unique unhealthy instance statuses detected from EC2 DescribeInstanceStatus. Broken down by status check category.",
	}, []string{categoryLabel})
)

// RegisterMetrics registers the interruption metrics with reg;
// registering them again is not an error.
func RegisterMetrics(reg prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{ReceivedMessagesTotal, DeletedMessagesTotal, MessageQueueDurationSeconds, InstanceStatusUnhealthyTotal} {
		if err := reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
