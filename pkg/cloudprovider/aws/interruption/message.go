package interruption

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind is what a queue message says happened; its value is the
// message_type label of karpenter_interruption_received_messages_total
// (upstream's values).
type Kind string

// Kinds of interruption messages and what the controller does for each.
const (
	// KindSpotInterrupted: EC2 will reclaim a spot instance in two
	// minutes. The spot offering is marked unavailable and the NodeClaim
	// deleted with the reclaim time as its termination deadline.
	KindSpotInterrupted Kind = "spot_interrupted"
	// KindRebalanceRecommendation: a spot instance is at elevated risk of
	// interruption. An event is published; when the NodePool opted in
	// (karp.sh/spot-rebalance: replace), the spot offering is marked
	// unavailable and the NodeClaim RebalanceRecommended, for the
	// disruption controller to replace it.
	KindRebalanceRecommendation Kind = "rebalance_recommendation"
	// KindScheduledChange: AWS Health scheduled maintenance (a retirement,
	// a reboot) for an EC2 instance. The NodeClaim is deleted.
	KindScheduledChange Kind = "scheduled_change"
	// KindInstanceStopped: the instance is stopping or stopped. The
	// NodeClaim is deleted.
	KindInstanceStopped Kind = "instance_stopped"
	// KindInstanceTerminated: the instance is shutting down or terminated.
	// The NodeClaim is deleted.
	KindInstanceTerminated Kind = "instance_terminated"
	// KindCapacityReservationInterrupted: EC2 is reclaiming an instance of
	// an interruptible capacity reservation. The reservation is treated as
	// full and the NodeClaim deleted.
	KindCapacityReservationInterrupted Kind = "capacity_reservation_interrupted"
	// KindInstanceStatus: EC2's instance status check has failed for two
	// minutes (the instance status poll, not the queue). The NodeClaim is
	// deleted with a termination deadline of now: its drain does not wait
	// for pods on a broken instance.
	KindInstanceStatus Kind = "instance_status"
	// KindSystemStatus: EC2's system status check (the host) has failed
	// for two minutes (the instance status poll). As KindInstanceStatus.
	KindSystemStatus Kind = "system_status"
	// KindEventStatus: EC2 has scheduled an event (reboot, maintenance,
	// retirement, stop) for the instance (the instance status poll). The
	// NodeClaim is deleted, as for KindScheduledChange.
	KindEventStatus Kind = "event_status"
	// KindNoOp: a well-formed message karp does not act on (another
	// source, another state, another AWS Health category). It is deleted.
	KindNoOp Kind = "no_op"
	// KindMalformed: a body that is not an EventBridge event, or a known
	// event without the fields it needs. It is logged and deleted (a karp
	// label value; upstream does not count these).
	KindMalformed Kind = "malformed"
)

// SpotNoticePeriod is how long after a spot interruption warning EC2
// reclaims the instance.
const SpotNoticePeriod = 2 * time.Minute

// Message is a parsed EventBridge event from the interruption queue.
type Message struct {
	Kind Kind
	// ID is the EventBridge event ID.
	ID string
	// Time is when the event happened (EventBridge's time); zero if the
	// event has none.
	Time time.Time
	// InstanceIDs are the EC2 instances the event is about.
	InstanceIDs []string
	// State is the instance state of a state-change notification.
	State string
}

// event is the EventBridge envelope; detail is decoded per kind.
type event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       string          `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

// ec2Detail is the detail of the aws.ec2 events handled: the spot
// interruption warning, rebalance recommendation, state-change
// notification and capacity reservation interruption warning.
type ec2Detail struct {
	InstanceID string `json:"instance-id"`
	State      string `json:"state"`
}

// healthDetail is the detail of an AWS Health event.
type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCategory string `json:"eventTypeCategory"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// Instance states of the state-change notification, by the kind they map
// to; other states are no-ops.
var (
	stoppedStates    = []string{"stopping", "stopped"}
	terminatedStates = []string{"shutting-down", "terminated"}
)

// ParseMessage reads an EventBridge event as EventBridge delivers it to
// SQS. Events are routed by (version, source, detail-type); anything else
// well-formed is KindNoOp. An error means the body is malformed.
func ParseMessage(body string) (Message, error) {
	if strings.TrimSpace(body) == "" {
		return Message{Kind: KindNoOp}, nil
	}
	var e event
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		return Message{}, fmt.Errorf("decoding EventBridge event: %w", err)
	}
	msg := Message{Kind: KindNoOp, ID: e.ID}
	if e.Time != "" {
		t, err := time.Parse(time.RFC3339, e.Time)
		if err != nil {
			return Message{}, fmt.Errorf("event %q: time %q is not RFC3339: %w", e.ID, e.Time, err)
		}
		msg.Time = t
	}
	if e.Version != "0" {
		return msg, nil
	}
	var err error
	switch {
	case e.Source == "aws.ec2" && e.DetailType == "EC2 Spot Instance Interruption Warning":
		err = msg.fromEC2(KindSpotInterrupted, e.Detail)
	case e.Source == "aws.ec2" && e.DetailType == "EC2 Instance Rebalance Recommendation":
		err = msg.fromEC2(KindRebalanceRecommendation, e.Detail)
	case e.Source == "aws.ec2" && e.DetailType == "EC2 Capacity Reservation Instance Interruption Warning":
		err = msg.fromEC2(KindCapacityReservationInterrupted, e.Detail)
	case e.Source == "aws.ec2" && e.DetailType == "EC2 Instance State-change Notification":
		err = msg.fromStateChange(e.Detail)
	case e.Source == "aws.health" && e.DetailType == "AWS Health Event":
		err = msg.fromHealth(e.Detail)
	}
	if err != nil {
		return Message{}, fmt.Errorf("event %q (%s): %w", e.ID, e.DetailType, err)
	}
	return msg, nil
}

func (m *Message) fromEC2(kind Kind, raw json.RawMessage) error {
	var d ec2Detail
	if err := decodeDetail(raw, &d); err != nil {
		return err
	}
	if d.InstanceID == "" {
		return errors.New("detail has no instance-id")
	}
	m.Kind, m.InstanceIDs, m.State = kind, []string{d.InstanceID}, d.State
	return nil
}

func (m *Message) fromStateChange(raw json.RawMessage) error {
	var d ec2Detail
	if err := decodeDetail(raw, &d); err != nil {
		return err
	}
	switch {
	case slices.Contains(stoppedStates, d.State):
		return m.fromEC2(KindInstanceStopped, raw)
	case slices.Contains(terminatedStates, d.State):
		return m.fromEC2(KindInstanceTerminated, raw)
	}
	return nil
}

// fromHealth accepts only scheduled changes to EC2; other services and
// categories (issues, account notifications) are no-ops.
func (m *Message) fromHealth(raw json.RawMessage) error {
	var d healthDetail
	if err := decodeDetail(raw, &d); err != nil {
		return err
	}
	if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
		return nil
	}
	var ids []string
	for _, entity := range d.AffectedEntities {
		if entity.EntityValue != "" {
			ids = append(ids, entity.EntityValue)
		}
	}
	if len(ids) == 0 {
		return errors.New("scheduled change has no affected entities")
	}
	m.Kind, m.InstanceIDs = KindScheduledChange, ids
	return nil
}

func decodeDetail(raw json.RawMessage, into any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return errors.New("event has no detail")
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("decoding detail: %w", err)
	}
	return nil
}
