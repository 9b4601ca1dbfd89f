package fake

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"k8s.io/utils/clock"
)

// SQS queue defaults and limits, as documented for standard queues.
const (
	sqsDefaultVisibilityTimeout = 30 * time.Second
	sqsDefaultRetention         = 4 * 24 * time.Hour
	sqsMaxWait                  = 20 * time.Second
	sqsMaxVisibilityTimeout     = 12 * time.Hour
	sqsMaxMessages              = 10
)

// SQSQueueURLPrefix is what the fake's queue URLs start with; the queue
// name follows.
const SQSQueueURLPrefix = "https://sqs.us-west-2.amazonaws.com/" + AccountID + "/"

var sqsQueueName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// SQS is a stateful fake of the SQS calls on standard queues: queues with
// attributes, messages with visibility timeouts, receipt handles and
// receive counts, delays, retention, and long polling that returns as soon
// as a message becomes available or the caller's context ends. Time comes
// from the clock given to NewSQS, so tests step visibility timeouts,
// delays and retention. It is safe for concurrent use.
type SQS struct {
	Faults

	clock clock.Clock

	mu     sync.Mutex
	queues map[string]*sqsQueue
	// arrived is closed (and replaced) whenever a message is sent, waking
	// long polls.
	arrived chan struct{}
	seq     int
}

type sqsQueue struct {
	name       string
	attributes map[string]string
	tags       map[string]string
	created    time.Time
	messages   []*sqsMessage
	// receipts maps every receipt handle issued to its message ID.
	receipts map[string]string
	deleted  int
}

type sqsMessage struct {
	id            string
	body          string
	attributes    map[string]sqstypes.MessageAttributeValue
	sent          time.Time
	visibleAt     time.Time
	receiveCount  int
	firstReceived time.Time
	// receipt is the handle of the latest receive; only it deletes.
	receipt string
}

// QueueCounts are a queue's messages by state.
type QueueCounts struct {
	// Visible messages are available to a receive.
	Visible int
	// InFlight messages were received and are within their visibility
	// timeout.
	InFlight int
	// Delayed messages were sent with a delay that has not passed.
	Delayed int
	// Deleted counts the messages deleted so far.
	Deleted int
}

// NewSQS returns a fake with no queues, reading time from clk.
func NewSQS(clk clock.Clock) *SQS {
	return &SQS{clock: clk, queues: map[string]*sqsQueue{}, arrived: make(chan struct{})}
}

// Queue returns the URL of the named queue; ok is false when it does not
// exist.
func (s *SQS) Queue(name string) (url string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[name]; !ok {
		return "", false
	}
	return SQSQueueURLPrefix + name, true
}

// Messages counts the named queue's messages by state (zero when the queue
// does not exist).
func (s *SQS) Messages(name string) QueueCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if !ok {
		return QueueCounts{}
	}
	now := s.clock.Now()
	q.expire(now)
	counts := QueueCounts{Deleted: q.deleted}
	for _, m := range q.messages {
		switch {
		case m.visibleAt.After(now) && m.receiveCount == 0:
			counts.Delayed++
		case m.visibleAt.After(now):
			counts.InFlight++
		default:
			counts.Visible++
		}
	}
	return counts
}

// DeleteQueue removes the named queue and its messages; it reports whether
// it existed.
func (s *SQS) DeleteQueue(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.queues[name]
	delete(s.queues, name)
	return ok
}

// CreateQueue creates a standard queue, or returns the URL of an existing
// one with the same attributes (QueueNameExists when they differ).
func (s *SQS) CreateQueue(_ context.Context, in *sqs.CreateQueueInput, _ ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error) {
	if err := s.enter("CreateQueue"); err != nil {
		return nil, err
	}
	name := deref(in.QueueName)
	if strings.HasSuffix(name, ".fifo") {
		return nil, &sqstypes.UnsupportedOperation{Message: ptr("FIFO queues are not simulated: " + name)}
	}
	if !sqsQueueName.MatchString(name) {
		return nil, APIError("InvalidParameterValue", fmt.Sprintf("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length: %q", name))
	}
	if err := validateQueueAttributes(in.Attributes); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[name]; ok {
		for k, v := range in.Attributes {
			if q.attributes[k] != v {
				return nil, &sqstypes.QueueNameExists{Message: ptr(fmt.Sprintf("A queue already exists with the same name and a different value for attribute %s", k))}
			}
		}
		return &sqs.CreateQueueOutput{QueueUrl: ptr(SQSQueueURLPrefix + name)}, nil
	}
	attributes := map[string]string{}
	for k, v := range in.Attributes {
		attributes[k] = v
	}
	tags := map[string]string{}
	for k, v := range in.Tags {
		tags[k] = v
	}
	s.queues[name] = &sqsQueue{name: name, attributes: attributes, tags: tags, created: s.clock.Now(), receipts: map[string]string{}}
	return &sqs.CreateQueueOutput{QueueUrl: ptr(SQSQueueURLPrefix + name)}, nil
}

// GetQueueUrl returns the named queue's URL, or QueueDoesNotExist.
func (s *SQS) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	if err := s.enter("GetQueueUrl"); err != nil {
		return nil, err
	}
	if owner := deref(in.QueueOwnerAWSAccountId); owner != "" && owner != AccountID {
		return nil, queueDoesNotExist()
	}
	url, ok := s.Queue(deref(in.QueueName))
	if !ok {
		return nil, queueDoesNotExist()
	}
	return &sqs.GetQueueUrlOutput{QueueUrl: ptr(url)}, nil
}

// SendMessage enqueues a message, visible after its delay (the request's
// DelaySeconds, else the queue's DelaySeconds attribute).
func (s *SQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	if err := s.enter("SendMessage"); err != nil {
		return nil, err
	}
	body := deref(in.MessageBody)
	if body == "" {
		return nil, APIError("MissingParameter", "The request must contain the parameter MessageBody.")
	}
	if in.DelaySeconds < 0 || in.DelaySeconds > 900 {
		return nil, APIError("InvalidParameterValue", fmt.Sprintf("Value %d for parameter DelaySeconds is invalid. Reason: must be between 0 and 900, if provided.", in.DelaySeconds))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueByURL(deref(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	delay := time.Duration(in.DelaySeconds) * time.Second
	if delay == 0 {
		delay = q.duration("DelaySeconds", 0)
	}
	now := s.clock.Now()
	s.seq++
	m := &sqsMessage{
		id:         fmt.Sprintf("%08x-0000-4000-8000-%012x", s.seq, s.seq),
		body:       body,
		attributes: in.MessageAttributes,
		sent:       now,
		visibleAt:  now.Add(delay),
	}
	q.messages = append(q.messages, m)
	close(s.arrived)
	s.arrived = make(chan struct{})
	return &sqs.SendMessageOutput{MessageId: ptr(m.id), MD5OfMessageBody: ptr(md5Hex(body))}, nil
}

// DeleteMessage deletes the message the receipt handle was issued for. As
// in SQS, a handle of an earlier receive, or of a message already deleted,
// succeeds without deleting; a handle never issued is
// ReceiptHandleIsInvalid.
func (s *SQS) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	if err := s.enter("DeleteMessage"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, err := s.queueByURL(deref(in.QueueUrl))
	if err != nil {
		return nil, err
	}
	handle := deref(in.ReceiptHandle)
	id, ok := q.receipts[handle]
	if !ok {
		return nil, &sqstypes.ReceiptHandleIsInvalid{Message: ptr(fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", handle))}
	}
	i := slices.IndexFunc(q.messages, func(m *sqsMessage) bool { return m.id == id })
	if i >= 0 && q.messages[i].receipt == handle {
		q.messages = slices.Delete(q.messages, i, i+1)
		q.deleted++
	}
	return &sqs.DeleteMessageOutput{}, nil
}

// GetQueueAttributes returns the queue's attributes and its approximate
// message counts, all of them for "All".
func (s *SQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	if err := s.enter("GetQueueAttributes"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	q, err := s.queueByURL(deref(in.QueueUrl))
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	all := map[string]string{
		string(sqstypes.QueueAttributeNameVisibilityTimeout):      strconv.Itoa(int(q.duration("VisibilityTimeout", sqsDefaultVisibilityTimeout).Seconds())),
		string(sqstypes.QueueAttributeNameMessageRetentionPeriod): strconv.Itoa(int(q.duration("MessageRetentionPeriod", sqsDefaultRetention).Seconds())),
		string(sqstypes.QueueAttributeNameDelaySeconds):           strconv.Itoa(int(q.duration("DelaySeconds", 0).Seconds())),
		string(sqstypes.QueueAttributeNameCreatedTimestamp):       strconv.FormatInt(q.created.Unix(), 10),
		string(sqstypes.QueueAttributeNameQueueArn):               fmt.Sprintf("arn:aws:sqs:us-west-2:%s:%s", AccountID, q.name),
	}
	for k, v := range q.attributes {
		if _, ok := all[k]; !ok {
			all[k] = v
		}
	}
	name := q.name
	s.mu.Unlock()
	counts := s.Messages(name)
	all[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)] = strconv.Itoa(counts.Visible)
	all[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] = strconv.Itoa(counts.InFlight)
	all[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed)] = strconv.Itoa(counts.Delayed)
	out := &sqs.GetQueueAttributesOutput{Attributes: map[string]string{}}
	for _, want := range in.AttributeNames {
		if want == sqstypes.QueueAttributeNameAll {
			out.Attributes = all
			break
		}
		v, ok := all[string(want)]
		if !ok && !slices.Contains(sqstypes.QueueAttributeName("").Values(), want) {
			return nil, &sqstypes.InvalidAttributeName{Message: ptr("Unknown Attribute " + string(want) + ".")}
		}
		if ok {
			out.Attributes[string(want)] = v
		}
	}
	return out, nil
}

// queueByURL resolves a queue URL (any URL whose last path segment is the
// queue name, so a simulated endpoint's URLs work too). Callers hold s.mu.
func (s *SQS) queueByURL(url string) (*sqsQueue, error) {
	if url == "" {
		return nil, APIError("MissingParameter", "The request must contain the parameter QueueUrl.")
	}
	name := url[strings.LastIndex(url, "/")+1:]
	q, ok := s.queues[name]
	if !ok {
		return nil, queueDoesNotExist()
	}
	return q, nil
}

// SQSThrottling is the error SQS returns when a caller exceeds its
// request rate (RequestThrottled); the SDK's retryer retries it.
func SQSThrottling() error {
	return &sqstypes.RequestThrottled{Message: ptr("Rate exceeded.")}
}

func queueDoesNotExist() error {
	return &sqstypes.QueueDoesNotExist{Message: ptr("The specified queue does not exist.")}
}

// duration reads a queue attribute in seconds, def when unset.
func (q *sqsQueue) duration(attribute string, def time.Duration) time.Duration {
	v, ok := q.attributes[attribute]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return def
	}
	return time.Duration(n) * time.Second
}

// expire drops the messages older than the queue's retention period.
func (q *sqsQueue) expire(now time.Time) {
	retention := q.duration("MessageRetentionPeriod", sqsDefaultRetention)
	q.messages = slices.DeleteFunc(q.messages, func(m *sqsMessage) bool { return !now.Before(m.sent.Add(retention)) })
}

// sqsAttributeRanges are the numeric queue attributes the fake checks, in
// seconds (bytes for MaximumMessageSize).
var sqsAttributeRanges = map[string][2]int{
	"DelaySeconds":                  {0, 900},
	"MaximumMessageSize":            {1024, 1048576},
	"MessageRetentionPeriod":        {60, 1209600},
	"ReceiveMessageWaitTimeSeconds": {0, 20},
	"VisibilityTimeout":             {0, 43200},
}

// sqsOtherAttributes are accepted and stored without checks.
var sqsOtherAttributes = []string{"Policy", "RedrivePolicy", "RedriveAllowPolicy", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled"}

func validateQueueAttributes(attributes map[string]string) error {
	for k, v := range attributes {
		bounds, numeric := sqsAttributeRanges[k]
		if !numeric {
			if !slices.Contains(sqsOtherAttributes, k) {
				return &sqstypes.InvalidAttributeName{Message: ptr("Unknown Attribute " + k + ".")}
			}
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < bounds[0] || n > bounds[1] {
			return &sqstypes.InvalidAttributeValue{Message: ptr(fmt.Sprintf("Invalid value for the parameter %s: %q, must be between %d and %d.", k, v, bounds[0], bounds[1]))}
		}
	}
	return nil
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s)) // SQS's message checksum, which the SDK verifies
	return hex.EncodeToString(sum[:])
}
