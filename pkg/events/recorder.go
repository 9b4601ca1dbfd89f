package events

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientevents "k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Window is how long an event's series stays open: the same note on the
// same object within Window of its last occurrence adds to the series'
// count instead of writing a new event. It matches client-go's series
// lifetime.
const Window = 6 * time.Minute

// flushInterval is how often counts of repeated notes that were not
// written at once are written to their series.
const flushInterval = 30 * time.Second

// maxNoteLength is the API's limit on an event's note.
const maxNoteLength = 1024

// queueLength bounds the events waiting to be written; more are dropped,
// as client-go's broadcaster drops them, so a flood of events never holds
// up a controller.
const queueLength = 1000

// eventWriter is the part of the Kubernetes client the recorder writes
// events with.
type eventWriter interface {
	Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error
	Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error
}

// Recorder is a k8s.io/client-go/tools/events EventRecorder whose series
// key includes the note (see the package comment). Start it (it is a
// controller-runtime Runnable) for events to be written.
type Recorder struct {
	writer     eventWriter
	scheme     *runtime.Scheme
	clock      clock.WithTicker
	log        logr.Logger
	controller string
	instance   string
	queue      chan *eventsv1.Event
	// dropped counts the events dropped since logDropped last logged them.
	dropped atomic.Int64

	// Owned by the Start goroutine.
	series map[seriesKey]*series
	// latest is the last note written for each object, type, reason and
	// action: a repeat of an older note is written at once, so the note
	// most recently seen is always the one last observed.
	latest map[noteKey]string
	// written counts the events created, to tell apart the names of
	// events created in the same instant.
	written uint64
}

var _ clientevents.EventRecorder = (*Recorder)(nil)

// noteKey is client-go's series key: what the events of one series share
// apart from the note.
type noteKey struct {
	eventType, reason, action string
	regarding, related        corev1.ObjectReference
}

// seriesKey is noteKey plus the note.
type seriesKey struct {
	noteKey
	note string
}

// series is one written event and how often its note has been seen.
type series struct {
	event *eventsv1.Event
	count int32
	last  time.Time
	dirty bool
}

// NewRecorder returns a Recorder writing events with writer, reporting as
// controller (karp reports as "karpenter", as upstream does).
func NewRecorder(writer eventWriter, scheme *runtime.Scheme, clk clock.WithTicker, log logr.Logger, controller string) *Recorder {
	hostname, _ := os.Hostname()
	return &Recorder{
		writer: writer, scheme: scheme, clock: clk, log: log,
		controller: controller, instance: controller + "-" + hostname,
		queue:  make(chan *eventsv1.Event, queueLength),
		series: map[seriesKey]*series{}, latest: map[noteKey]string{},
	}
}

// Eventf queues an event about regarding (and related, which may be nil).
func (r *Recorder) Eventf(regarding runtime.Object, related runtime.Object, eventType, reason, action, note string, args ...interface{}) {
	message := truncate(fmt.Sprintf(note, args...))
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		r.log.Error(err, "Dropping event: no reference to its object", "reason", reason, "note", message)
		return
	}
	if eventType != corev1.EventTypeNormal && eventType != corev1.EventTypeWarning {
		r.log.Error(nil, "Dropping event of unsupported type", "eventType", eventType, "reason", reason)
		return
	}
	var relatedRef *corev1.ObjectReference
	if related != nil {
		if relatedRef, err = reference.GetReference(r.scheme, related); err != nil {
			r.log.V(1).Info("Event without its related object: no reference to it", "reason", reason, "error", err.Error())
		}
	}
	namespace := ref.Namespace
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	event := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: namespace},
		EventTime:           metav1.NewMicroTime(r.clock.Now()),
		ReportingController: r.controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Regarding:           *ref,
		Related:             relatedRef,
		Note:                message,
		Type:                eventType,
	}
	select {
	case r.queue <- event:
	default:
		// The first drop is logged at once, with the event; later ones
		// are counted and logged as one line each flush interval while
		// they last, not one ERROR line per event: a burst on a slow API
		// server would drop thousands.
		if r.dropped.Add(1) == 1 {
			r.log.Info("Dropping events: too many waiting to be written (the API server takes them slower than they come); "+
				"how many is logged every 30s while it lasts", "queued", queueLength, "reason", reason, "note", message)
		}
	}
}

// logDropped logs how many events were dropped since the last call, if
// any.
func (r *Recorder) logDropped() {
	if n := r.dropped.Swap(0); n > 0 {
		r.log.Info("Dropped events: too many were waiting to be written", "count", n, "queued", queueLength)
	}
}

// NeedLeaderElection is false: a replica that is not leading writes the
// few events it records too.
func (r *Recorder) NeedLeaderElection() bool { return false }

// Start writes queued events until ctx is done, then writes the counts
// not yet written.
func (r *Recorder) Start(ctx context.Context) error {
	ticker := r.clock.NewTicker(flushInterval)
	defer ticker.Stop()
	for {
		select {
		case event := <-r.queue:
			r.record(ctx, event)
		case <-ticker.C():
			r.flush(ctx, r.clock.Now())
			r.logDropped()
		case <-ctx.Done():
			// ctx is done: write the last counts under a short deadline of their own.
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			r.flush(flushCtx, r.clock.Now().Add(Window))
			cancel()
			r.logDropped()
			return nil
		}
	}
}

// record writes event as a new event or as one more occurrence of a series.
func (r *Recorder) record(ctx context.Context, event *eventsv1.Event) {
	key := keyOf(event)
	now := event.EventTime.Time
	s, ok := r.series[key]
	if !ok || now.Sub(s.last) >= Window {
		if ok && s.dirty {
			r.writeSeries(ctx, s)
		}
		if created := r.create(ctx, event); created != nil {
			r.series[key] = &series{event: created, count: 1, last: now}
			r.latest[key.noteKey] = key.note
		}
		return
	}
	s.count++
	s.last = now
	// The first repeat starts the series at once, as client-go does; a
	// note that was superseded by another and is back is written at once
	// so the object's newest event says it. Other repeats wait for flush.
	if s.count == 2 || r.latest[key.noteKey] != key.note {
		r.writeSeries(ctx, s)
	} else {
		s.dirty = true
	}
	r.latest[key.noteKey] = key.note
}

// flush writes the series with unwritten counts and forgets those whose
// last occurrence is Window before now.
func (r *Recorder) flush(ctx context.Context, now time.Time) {
	for key, s := range r.series {
		if s.dirty {
			r.writeSeries(ctx, s)
		}
		if now.Sub(s.last) >= Window {
			delete(r.series, key)
			if r.latest[key.noteKey] == key.note {
				delete(r.latest, key.noteKey)
			}
		}
	}
}

func (r *Recorder) create(ctx context.Context, event *eventsv1.Event) *eventsv1.Event {
	// A name taken (by a replica, or a previous process, that wrote an
	// event of the same object in the same instant) is tried again with
	// the next sequence number.
	var err error
	for range 3 {
		event.Name = r.name(event)
		if err = r.writer.Create(ctx, event); !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	if err != nil {
		r.log.Error(err, "Writing event", "reason", event.Reason, "note", event.Note)
		return nil
	}
	return event
}

// writeSeries writes s's count and last occurrence to its event. An event
// the API server no longer has (events expire) is written anew.
func (r *Recorder) writeSeries(ctx context.Context, s *series) {
	s.dirty = false
	before := s.event.DeepCopy()
	s.event.Series = &eventsv1.EventSeries{Count: s.count, LastObservedTime: metav1.NewMicroTime(s.last)}
	err := r.writer.Patch(ctx, s.event, client.MergeFrom(before))
	if apierrors.IsNotFound(err) {
		fresh := before.DeepCopy()
		fresh.ObjectMeta = metav1.ObjectMeta{Namespace: before.Namespace}
		fresh.Series = s.event.Series
		fresh.Name = r.name(fresh)
		err = r.writer.Create(ctx, fresh)
		if err == nil {
			s.event = fresh
		}
	}
	if err != nil {
		r.log.Error(err, "Writing event series", "reason", s.event.Reason, "note", s.event.Note, "count", s.count)
	}
}

// name is a new event's name: its object's name, then the event's time
// and a sequence number (events written in one instant differ), as
// client-go names events. The object's name is cut to keep the whole
// within the API's 253 characters.
func (r *Recorder) name(event *eventsv1.Event) string {
	r.written++
	suffix := fmt.Sprintf(".%x.%x", event.EventTime.UnixNano(), r.written)
	base := event.Regarding.Name
	if len(base)+len(suffix) > 253 {
		base = strings.TrimRight(base[:253-len(suffix)], ".-")
	}
	return base + suffix
}

// keyOf is event's series key. Object references are keyed without their
// resource version, as core/v1's correlator keys them: a pod whose status
// changed between two passes that say the same thing gets one event.
func keyOf(event *eventsv1.Event) seriesKey {
	key := seriesKey{noteKey: noteKey{eventType: event.Type, reason: event.Reason, action: event.Action, regarding: event.Regarding}, note: event.Note}
	key.regarding.ResourceVersion = ""
	if event.Related != nil {
		key.related = *event.Related
		key.related.ResourceVersion = ""
	}
	return key
}

// truncate cuts note to the API's limit without splitting a character.
func truncate(note string) string {
	if len(note) <= maxNoteLength {
		return note
	}
	return strings.ToValidUTF8(note[:maxNoteLength-3], "") + "..."
}
