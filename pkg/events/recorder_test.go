package events_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/karp-autoscaler/karp/pkg/events"
)

// harness runs a Recorder against the test API server with a fake clock.
type harness struct {
	t        *testing.T
	recorder *events.Recorder
	clock    *clocktesting.FakeClock
	pod      *corev1.Pod
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	h := &harness{
		t:        t,
		recorder: events.NewRecorder(env.Client, env.Scheme, clk, testr.New(t), "karpenter"),
		clock:    clk,
		// The regarding object need not exist: events name it by reference.
		// Each test's pod has its own name, so the events of tests that
		// start at the same fake instant have different names.
		pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(t.Name()), Namespace: "default",
			UID: types.UID("uid-" + strings.ToLower(t.Name()))}},
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.recorder.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("recorder: %v", err)
		}
	})
	return h
}

func (h *harness) failedScheduling(note string) {
	h.recorder.Eventf(h.pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Provisioning", "%s", note)
}

// events lists the pod's events, oldest first by last occurrence.
func (h *harness) events() []eventsv1.Event {
	h.t.Helper()
	var list eventsv1.EventList
	if err := env.Client.List(h.t.Context(), &list, client.InNamespace(h.pod.Namespace)); err != nil {
		h.t.Fatalf("listing events: %v", err)
	}
	var got []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.UID == h.pod.UID {
			got = append(got, ev)
		}
	}
	sort.SliceStable(got, func(i, j int) bool { return lastSeen(got[i]).Before(lastSeen(got[j])) })
	return got
}

func lastSeen(ev eventsv1.Event) time.Time {
	if ev.Series != nil {
		return ev.Series.LastObservedTime.Time
	}
	return ev.EventTime.Time
}

// summary is what a user reads: each event's note and count.
func summary(evs []eventsv1.Event) string {
	var parts []string
	for _, ev := range evs {
		count := int32(1)
		if ev.Series != nil {
			count = ev.Series.Count
		}
		parts = append(parts, fmt.Sprintf("%s x%d", ev.Note, count))
	}
	return strings.Join(parts, ", ")
}

// eventually waits until the pod's events read want, stepping the fake
// clock by step (which may be zero) between looks.
func (h *harness) eventually(want string, step time.Duration) {
	h.t.Helper()
	var got string
	err := wait.PollUntilContextTimeout(h.t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = summary(h.events())
		if got == want {
			return true, nil
		}
		h.clock.Step(step)
		return false, nil
	})
	if err != nil {
		h.t.Fatalf("events of the pod: got %q, want %q", got, want)
	}
}

// note moves the fake clock by after, records note as a FailedScheduling
// warning and waits until the pod's events read want, written at once.
func (h *harness) note(after time.Duration, note, want string) {
	h.t.Helper()
	h.clock.Step(after)
	h.failedScheduling(note)
	h.eventually(want, 0)
}

func TestChangedNoteIsWrittenAtOnce(t *testing.T) {
	const notReady, noType = `NodePool "a" not Ready`, `NodePool "a" requirements leave no instance type`
	h := newHarness(t)
	h.note(0, notReady, notReady+" x1")
	h.note(time.Second, noType, notReady+" x1, "+noType+" x1")
	// Another event of a different reason stays its own.
	h.clock.Step(time.Second)
	h.recorder.Eventf(h.pod, nil, corev1.EventTypeNormal, "Nominated", "Provisioning", "Pod should schedule on: %s", "nodeclaim/x")
	h.eventually(notReady+" x1, "+noType+" x1, Pod should schedule on: nodeclaim/x x1", 0)
}

func TestRepeatedNoteIsOneEventWithACount(t *testing.T) {
	h := newHarness(t)
	h.note(0, "no NodePool fits", "no NodePool fits x1")
	h.note(time.Second, "no NodePool fits", "no NodePool fits x2")
	// A third repeat is counted at the next flush.
	h.clock.Step(time.Second)
	h.failedScheduling("no NodePool fits")
	h.eventually("no NodePool fits x3", 10*time.Second)
}

func TestSupersededNoteBackIsNewestAtOnce(t *testing.T) {
	h := newHarness(t)
	h.note(0, "A", "A x1")
	h.note(time.Second, "B", "A x1, B x1")
	h.note(time.Second, "A", "B x1, A x2")
	// A repeat of the newest note waits for the flush; the older note
	// back is written at once.
	h.clock.Step(time.Second)
	h.failedScheduling("A")
	h.note(time.Second, "B", "A x2, B x2")
	h.eventually("A x3, B x2", 10*time.Second)
}

func TestRepeatOnANewVersionOfTheObjectIsCounted(t *testing.T) {
	h := newHarness(t)
	h.pod.ResourceVersion = "1"
	h.note(0, "A", "A x1")
	h.pod.ResourceVersion = "2"
	h.note(time.Second, "A", "A x2")
}

func TestNoteAfterTheWindowIsANewEvent(t *testing.T) {
	h := newHarness(t)
	h.note(0, "A", "A x1")
	h.note(events.Window, "A", "A x1, A x1")
}

func TestLongNoteIsTruncated(t *testing.T) {
	h := newHarness(t)
	h.note(0, strings.Repeat("é", 1000), strings.Repeat("é", 510)+"... x1")
}

// TestDroppedEventsAreCountedNotLoggedOneByOne: with the queue full, the
// first dropped event is logged with its reason and the rest are counted,
// then logged as one line with the count when the recorder flushes (here,
// as it stops); neither is an error.
func TestDroppedEventsAreCountedNotLoggedOneByOne(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{})
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	recorder := events.NewRecorder(env.Client, env.Scheme, clk, log, "karpenter")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "flood", Namespace: "default", UID: "uid-flood"}}
	// Nothing writes yet: the first 1,000 wait in the queue, 250 more are dropped.
	for i := range 1250 {
		recorder.Eventf(pod, nil, corev1.EventTypeNormal, "Nominated", "", "note %d", i)
	}
	mu.Lock()
	if len(lines) == 0 {
		t.Fatal("nothing logged after 250 drops")
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "Dropping events") || !strings.Contains(lines[0], `"reason"="Nominated"`) {
		t.Errorf("after 250 drops the log has %d lines (the first %q), want one naming the first drop's reason", len(lines), lines[0])
	}
	mu.Unlock()

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := recorder.Start(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var counted []string
	for _, l := range lines {
		if strings.Contains(l, "Dropped events") {
			counted = append(counted, l)
		}
		// Writes the cancelled context refused are logged as errors;
		// the drops are not.
		if strings.Contains(l, "Dropp") && strings.Contains(l, `"error"`) {
			t.Errorf("a drop was logged as an error: %s", l)
		}
	}
	if len(counted) != 1 || !strings.Contains(counted[0], `"count"=250`) {
		t.Errorf("count lines %q, want one with count 250", counted)
	}
}
