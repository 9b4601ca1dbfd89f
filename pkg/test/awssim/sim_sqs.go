package awssim

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// InterruptionKind is an EventBridge event karp's interruption queue
// receives about an instance.
type InterruptionKind string

const (
	// SpotInterruption is "EC2 Spot Instance Interruption Warning": EC2
	// reclaims the spot instance in two minutes.
	SpotInterruption InterruptionKind = "spot_interrupted"
	// RebalanceRecommendation is "EC2 Instance Rebalance Recommendation".
	RebalanceRecommendation InterruptionKind = "rebalance_recommendation"
	// ScheduledChange is an AWS Health EC2 scheduled change (retirement).
	ScheduledChange InterruptionKind = "scheduled_change"
	// StateStopping, StateStopped, StateShuttingDown and StateTerminated are
	// "EC2 Instance State-change Notification" events.
	StateStopping     InterruptionKind = "stopping"
	StateStopped      InterruptionKind = "stopped"
	StateShuttingDown InterruptionKind = "shutting-down"
	StateTerminated   InterruptionKind = "terminated"
)

// event is an EventBridge event as it lands in SQS.
type event struct {
	Version    string   `json:"version"`
	ID         string   `json:"id"`
	DetailType string   `json:"detail-type"`
	Source     string   `json:"source"`
	Account    string   `json:"account"`
	Time       string   `json:"time"`
	Region     string   `json:"region"`
	Resources  []string `json:"resources"`
	Detail     any      `json:"detail"`
}

// InterruptionMessage is the EventBridge JSON of kind for instanceID, as
// the getting-started rules deliver it to the queue.
func (s *Sim) InterruptionMessage(kind InterruptionKind, instanceID string) (string, error) {
	zone := s.zones[0].Name
	if inst, ok := s.Instance(instanceID); ok && inst.Placement != nil {
		zone = aws.ToString(inst.Placement.AvailabilityZone)
	}
	e := event{
		Version: "0", ID: string(uuid.NewUUID()), Source: "aws.ec2", Account: fake.AccountID,
		Time: s.opts.Clock.Now().UTC().Format("2006-01-02T15:04:05Z"), Region: s.opts.Region,
		Resources: []string{fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", zone, fake.AccountID, instanceID)},
	}
	switch kind {
	case SpotInterruption:
		e.DetailType = "EC2 Spot Instance Interruption Warning"
		e.Detail = map[string]string{"instance-id": instanceID, "instance-action": "terminate"}
	case RebalanceRecommendation:
		e.DetailType = "EC2 Instance Rebalance Recommendation"
		e.Detail = map[string]string{"instance-id": instanceID}
	case ScheduledChange:
		e.Source, e.DetailType, e.Resources = "aws.health", "AWS Health Event", nil
		e.Detail = map[string]any{
			"eventArn":          fmt.Sprintf("arn:aws:health:%s::event/EC2/AWS_EC2_PERSISTENT_INSTANCE_RETIREMENT_SCHEDULED/%s", s.opts.Region, e.ID),
			"service":           "EC2",
			"eventTypeCode":     "AWS_EC2_PERSISTENT_INSTANCE_RETIREMENT_SCHEDULED",
			"eventTypeCategory": "scheduledChange",
			"affectedEntities":  []map[string]string{{"entityValue": instanceID}},
		}
	case StateStopping, StateStopped, StateShuttingDown, StateTerminated:
		e.DetailType = "EC2 Instance State-change Notification"
		e.Detail = map[string]string{"instance-id": instanceID, "state": string(kind)}
	default:
		return "", fmt.Errorf("unknown interruption kind %q", kind)
	}
	body, err := json.Marshal(e)
	return string(body), err
}

// SendInterruption puts kind's EventBridge message about instanceID into
// the interruption queue. After a spot interruption warning EC2 reclaims
// the instance when Options.SpotReclaimDelay has passed, if it still runs
// then (reclaimSpot).
func (s *Sim) SendInterruption(ctx context.Context, kind InterruptionKind, instanceID string) error {
	body, err := s.InterruptionMessage(kind, instanceID)
	if err != nil {
		return err
	}
	if err := s.SendMessage(ctx, body); err != nil {
		return err
	}
	if kind == SpotInterruption && s.opts.SpotReclaimDelay > 0 {
		// The reclaim outlives the call that warned of it.
		reclaimCtx := context.WithoutCancel(ctx)
		s.after(s.opts.SpotReclaimDelay, func() { s.reclaimSpot(reclaimCtx, instanceID) })
	}
	return nil
}

// reclaimSpot is EC2 taking the spot instance back: a pending or running
// instance turns shutting-down (then terminated), and the state-change
// notification "shutting-down" goes to the interruption queue, as the
// getting-started EventBridge rule delivers it. An instance already
// terminating is left alone.
func (s *Sim) reclaimSpot(ctx context.Context, instanceID string) {
	if !s.EC2.Reclaim(instanceID) {
		return
	}
	body, err := s.InterruptionMessage(StateShuttingDown, instanceID)
	if err == nil {
		_ = s.SendMessage(ctx, body) // fails only once the queue was deleted: nobody is listening then
	}
}

// after runs f on its own goroutine once d has passed on the Sim's clock,
// unless Close comes first (f reads the clock: a fake clock runs the
// callback holding its lock). A clock that cannot run a function later
// (the real and the fake one both can) counts real time.
func (s *Sim) after(d time.Duration, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if delayed, ok := s.opts.Clock.(clock.WithDelayedExecution); ok {
		s.reclaims = append(s.reclaims, delayed.AfterFunc(d, func() { go f() }).Stop)
		return
	}
	s.reclaims = append(s.reclaims, time.AfterFunc(d, f).Stop)
}

// SendMessage puts any body into the interruption queue (malformed or
// foreign messages included).
func (s *Sim) SendMessage(ctx context.Context, body string) error {
	url, ok := s.SQS.Queue(s.QueueName())
	if !ok {
		return fmt.Errorf("no queue %s", s.QueueName())
	}
	_, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)})
	return err
}

// seedQueue creates the interruption queue as the getting-started
// CloudFormation does (five-minute retention).
func (s *Sim) seedQueue(ctx context.Context) error {
	s.SQS = fake.NewSQS(s.opts.Clock)
	_, err := s.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String(s.QueueName()),
		Attributes: map[string]string{"MessageRetentionPeriod": "300"},
	})
	if err != nil {
		return fmt.Errorf("creating the interruption queue: %w", err)
	}
	return nil
}
