package fake

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// ReceiveMessage returns up to MaxNumberOfMessages (1 to 10, default 1)
// visible messages, oldest first, each hidden for the visibility timeout
// (the request's, else the queue's) under a new receipt handle. With a
// wait time (the request's WaitTimeSeconds, else the queue's
// ReceiveMessageWaitTimeSeconds) and nothing visible, it long-polls: it
// returns as soon as a message is sent or becomes visible again, when the
// wait ends (with no messages), or when ctx ends (with ctx's error).
func (s *SQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if err := s.enter("ReceiveMessage"); err != nil {
		return nil, err
	}
	limit := int(in.MaxNumberOfMessages)
	if limit == 0 {
		limit = 1
	}
	if limit < 1 || limit > sqsMaxMessages {
		return nil, APIError("InvalidParameterValue", fmt.Sprintf("Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", in.MaxNumberOfMessages))
	}
	wait := time.Duration(in.WaitTimeSeconds) * time.Second
	if wait < 0 || wait > sqsMaxWait {
		return nil, APIError("InvalidParameterValue", fmt.Sprintf("Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", in.WaitTimeSeconds))
	}
	visibility := time.Duration(in.VisibilityTimeout) * time.Second
	if visibility < 0 || visibility > sqsMaxVisibilityTimeout {
		return nil, APIError("InvalidParameterValue", fmt.Sprintf("Value %d for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided.", in.VisibilityTimeout))
	}
	want := systemAttributes(in)
	wantMessageAttributes := messageAttributes(in.MessageAttributeNames)
	url := deref(in.QueueUrl)

	deadline := time.Time{}
	for {
		s.mu.Lock()
		q, err := s.queueByURL(url)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		now := s.clock.Now()
		if deadline.IsZero() {
			if wait == 0 {
				wait = q.duration("ReceiveMessageWaitTimeSeconds", 0)
			}
			if visibility == 0 {
				visibility = q.duration("VisibilityTimeout", sqsDefaultVisibilityTimeout)
			}
			deadline = now.Add(wait)
		}
		out := s.receive(q, now, limit, visibility, want, wantMessageAttributes)
		if len(out) > 0 || !now.Before(deadline) {
			s.mu.Unlock()
			return &sqs.ReceiveMessageOutput{Messages: out}, nil
		}
		wake := deadline
		if next := q.nextVisible(now); !next.IsZero() && next.Before(wake) {
			wake = next
		}
		arrived := s.arrived
		s.mu.Unlock()

		timer := s.clock.NewTimer(wake.Sub(now))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-arrived:
		case <-timer.C():
		}
		timer.Stop()
	}
}

// receive takes up to limit visible messages of q, oldest first, and
// hides them for visibility under new receipt handles. Callers hold s.mu.
func (s *SQS) receive(q *sqsQueue, now time.Time, limit int, visibility time.Duration, want, wantMessageAttribute func(string) bool) []sqstypes.Message {
	q.expire(now)
	var out []sqstypes.Message
	for _, m := range q.messages {
		if len(out) == limit {
			break
		}
		if m.visibleAt.After(now) {
			continue
		}
		s.seq++
		m.receipt = fmt.Sprintf("AQEB%s-%d", m.id, s.seq)
		q.receipts[m.receipt] = m.id
		m.receiveCount++
		if m.firstReceived.IsZero() {
			m.firstReceived = now
		}
		m.visibleAt = now.Add(visibility)
		msg := sqstypes.Message{
			MessageId:     ptr(m.id),
			ReceiptHandle: ptr(m.receipt),
			Body:          ptr(m.body),
			MD5OfBody:     ptr(md5Hex(m.body)),
		}
		attributes := map[string]string{
			string(sqstypes.MessageSystemAttributeNameSentTimestamp):                    strconv.FormatInt(m.sent.UnixMilli(), 10),
			string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount):          strconv.Itoa(m.receiveCount),
			string(sqstypes.MessageSystemAttributeNameApproximateFirstReceiveTimestamp): strconv.FormatInt(m.firstReceived.UnixMilli(), 10),
			string(sqstypes.MessageSystemAttributeNameSenderId):                         AccountID,
		}
		for k, v := range attributes {
			if want(k) {
				if msg.Attributes == nil {
					msg.Attributes = map[string]string{}
				}
				msg.Attributes[k] = v
			}
		}
		for k, v := range m.attributes {
			if wantMessageAttribute(k) {
				if msg.MessageAttributes == nil {
					msg.MessageAttributes = map[string]sqstypes.MessageAttributeValue{}
				}
				msg.MessageAttributes[k] = v
			}
		}
		out = append(out, msg)
	}
	return out
}

// messageAttributes reports which message attributes the request asked
// for: the named ones, every one for "All" or ".*", and those starting
// with a prefix for "prefix.*".
func messageAttributes(names []string) func(string) bool {
	return func(name string) bool {
		for _, n := range names {
			if n == "All" || n == ".*" || n == name {
				return true
			}
			if prefix, ok := strings.CutSuffix(n, ".*"); ok && strings.HasPrefix(name, prefix+".") {
				return true
			}
		}
		return false
	}
}

// nextVisible is the earliest time a hidden message of q becomes visible
// (zero if none is hidden).
func (q *sqsQueue) nextVisible(now time.Time) time.Time {
	var next time.Time
	for _, m := range q.messages {
		if m.visibleAt.After(now) && (next.IsZero() || m.visibleAt.Before(next)) {
			next = m.visibleAt
		}
	}
	return next
}

// systemAttributes reports which message system attributes the request
// asked for, through MessageSystemAttributeNames or the older
// AttributeNames ("All" asks for every one).
func systemAttributes(in *sqs.ReceiveMessageInput) func(string) bool {
	// Clients still send the deprecated AttributeNames (Karpenter's own
	// poll does), and SQS honours both.
	deprecated := in.AttributeNames //nolint:staticcheck // read on purpose, see above
	names := make([]string, 0, len(deprecated)+len(in.MessageSystemAttributeNames))
	for _, n := range deprecated {
		names = append(names, string(n))
	}
	for _, n := range in.MessageSystemAttributeNames {
		names = append(names, string(n))
	}
	return func(name string) bool {
		return slices.Contains(names, "All") || slices.Contains(names, name)
	}
}
