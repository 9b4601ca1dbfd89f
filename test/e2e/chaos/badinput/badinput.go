package badinput

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/karp-autoscaler/karp/pkg/apis/v1"
)

// ReportingController is the reporting controller of karp's events
// (operator.Component); the kube-scheduler's FailedScheduling events are
// told apart by theirs.
const ReportingController = "karpenter"

// Case is one piece of bad input and the outcome karp gives it.
type Case struct {
	// Name says what is bad, e.g. "nodepool-unknown-operator".
	Name string
	// Setup builds valid objects the case needs first (a NodePool its pod
	// selects), in the namespace for namespaced ones; nil for none.
	Setup func(namespace string) []client.Object
	// Object builds the bad input.
	Object func(namespace string) client.Object
	// Runs is set for a pod that is bad only in an annotation: it is meant
	// to be scheduled and run (on whatever node karp gives it), and its
	// outcome shows only once karp weighs disrupting that node. Verify
	// does not count it as launched for bad input.
	Runs bool
	// Exactly one of the outcomes is set.
	Rejection  *Rejection
	Event      *Event
	Condition  *Condition
	Annotation *Annotation
}

// Rejection is the API server refusing the object as Invalid, with a
// cause on Field whose message contains Message.
type Rejection struct {
	Field   string
	Message string
}

// Event is karp recording an event about the object: the Reason, the
// Type, and a note containing each of Note.
type Event struct {
	Reason string
	Type   string
	Note   []string
}

// Condition is karp setting a status condition on the object: Type with
// Status and Reason, its message containing each of Message.
type Condition struct {
	Type    string
	Status  metav1.ConditionStatus
	Reason  string
	Message []string
}

// Annotation is karp replacing the object's annotation Key, which the case
// set to Malformed, with a value of its own.
type Annotation struct {
	Key       string
	Malformed string
}

// Result is what Run did with one case.
type Result struct {
	Case Case
	// Created are the objects the API server accepted (the setup, and the
	// bad object unless it was rightly rejected), for Verify and Cleanup.
	Created []client.Object
	// Object is the bad object as sent (and, when accepted, as created).
	Object client.Object
	// Seen is karp's answer once the outcome was seen: the rejection
	// message, the event's reason and note, the condition, the annotation.
	Seen string
	// Err is set when the case already failed at Run: an object that
	// should have been rejected was accepted or refused for another
	// reason, or the setup failed.
	Err error
}

// Run applies every case of Cases in order and returns what happened to
// each; a rejection is checked here, the other outcomes by Verify.
func Run(ctx context.Context, cl client.Client, namespace string) []Result {
	return RunCases(ctx, cl, namespace, Cases())
}

// RunCases is Run over the given cases (after the fixtures they share,
// whose result comes first).
func RunCases(ctx context.Context, cl client.Client, namespace string, cases []Case) []Result {
	results := make([]Result, 0, len(cases)+1)
	shared := Case{Name: "fixtures", Setup: func(string) []client.Object { return fixtures()[1:] },
		Object: func(string) client.Object { return fixtures()[0] }}
	results = append(results, apply(ctx, cl, namespace, shared))
	for _, c := range cases {
		results = append(results, apply(ctx, cl, namespace, c))
	}
	return results
}

func apply(ctx context.Context, cl client.Client, namespace string, c Case) Result {
	res := Result{Case: c}
	if c.Setup != nil {
		for _, typed := range c.Setup(namespace) {
			obj, err := toUnstructured(typed)
			if err != nil {
				res.Err = err
				return res
			}
			if err := cl.Create(ctx, obj); err != nil {
				res.Err = fmt.Errorf("creating setup %s %s: %w", kindOf(obj), obj.GetName(), err)
				return res
			}
			res.Created = append(res.Created, obj)
		}
	}
	obj, err := toUnstructured(c.Object(namespace))
	if err != nil {
		res.Err = err
		return res
	}
	res.Object = obj
	err = cl.Create(ctx, res.Object)
	if err == nil {
		res.Created = append(res.Created, res.Object)
	}
	switch {
	case c.Rejection != nil:
		if res.Err = c.Rejection.check(err); res.Err == nil {
			res.Seen = err.Error()
		}
	case err != nil:
		res.Err = fmt.Errorf("creating %s %s: %w", kindOf(res.Object), res.Object.GetName(), err)
	}
	return res
}

// check says what is wrong with the answer to a create that should have
// been rejected.
func (r *Rejection) check(err error) error {
	if err == nil {
		return fmt.Errorf("accepted, want a rejection of %s (%q)", r.Field, r.Message)
	}
	if !apierrors.IsInvalid(err) {
		return fmt.Errorf("refused with %w, want Invalid on %s (%q)", err, r.Field, r.Message)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			if cause.Field == r.Field && strings.Contains(cause.Message, r.Message) {
				return nil
			}
		}
	}
	return fmt.Errorf("rejected with %q, want a cause on %s containing %q", err.Error(), r.Field, r.Message)
}

// Verify waits until every accepted case has its outcome, and checks that
// none disturbed anything: no NodeClaim launched for a case's NodePool, no
// case's pod bound to a node or nominated for one. It returns the cases that failed (at Run or
// here, with what was seen) once all have passed or ctx is done.
func Verify(ctx context.Context, cl client.Client, results []Result) error {
	failed := map[int]error{}
	pending := map[int]error{}
	for i, r := range results {
		switch {
		case r.Err != nil:
			failed[i] = r.Err
		case r.Case.Rejection == nil:
			pending[i] = errors.New("not checked yet")
		}
	}
	_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		for i := range pending {
			results[i].Seen, pending[i] = results[i].outcome(ctx, cl)
			if pending[i] == nil {
				delete(pending, i)
			}
		}
		return len(pending) == 0, nil
	})
	// The last look (what was seen, what was launched) gets a moment of
	// its own even when ctx is done.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	for i := range pending {
		if results[i].Seen, pending[i] = results[i].outcome(ctx, cl); pending[i] == nil {
			delete(pending, i)
		}
	}
	var errs []error
	for i, r := range results {
		if err, ok := failed[i]; ok {
			errs = append(errs, fmt.Errorf("%s: %w", r.Case.Name, err))
		}
		if err, ok := pending[i]; ok {
			errs = append(errs, fmt.Errorf("%s: %w", r.Case.Name, err))
		}
	}
	if err := undisturbed(ctx, cl, results); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// outcome returns what karp said once the accepted object shows the
// case's outcome, else an error saying what was seen.
func (r Result) outcome(ctx context.Context, cl client.Client) (string, error) {
	switch c := r.Case; {
	case c.Event != nil:
		return c.Event.check(ctx, cl, r.Object)
	case c.Condition != nil:
		return c.Condition.check(ctx, cl, r.Object)
	case c.Annotation != nil:
		return c.Annotation.check(ctx, cl, r.Object)
	}
	return "", nil
}

func (e *Event) check(ctx context.Context, cl client.Client, obj client.Object) (string, error) {
	ns := obj.GetNamespace()
	if ns == "" {
		ns = corev1.NamespaceDefault // events about cluster-scoped objects
	}
	var list eventsv1.EventList
	if err := cl.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return "", fmt.Errorf("listing events: %w", err)
	}
	var seen []string
	for _, ev := range list.Items {
		if ev.Regarding.UID != obj.GetUID() || ev.ReportingController != ReportingController {
			continue
		}
		seen = append(seen, ev.Type+" "+ev.Reason+": "+ev.Note)
		if ev.Reason == e.Reason && ev.Type == e.Type && containsAll(ev.Note, e.Note) {
			return ev.Reason + ": " + ev.Note, nil
		}
	}
	return "", fmt.Errorf("no %s %s event from karp with a note containing %q; karp's events: %q", e.Type, e.Reason, e.Note, seen)
}

func (c *Condition) check(ctx context.Context, cl client.Client, obj client.Object) (string, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), u); err != nil {
		return "", fmt.Errorf("getting %s: %w", obj.GetName(), err)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, raw := range conds {
		m, _ := raw.(map[string]interface{})
		if m["type"] != c.Type {
			continue
		}
		status, reason, message := fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		if status == string(c.Status) && reason == c.Reason && containsAll(message, c.Message) {
			return fmt.Sprintf("%s=%s %s: %s", c.Type, status, reason, message), nil
		}
		return "", fmt.Errorf("condition %s is %s/%s %q, want %s/%s containing %q", c.Type, status, reason, message, c.Status, c.Reason, c.Message)
	}
	return "", fmt.Errorf("no %s condition yet, want %s/%s", c.Type, c.Status, c.Reason)
}

func (a *Annotation) check(ctx context.Context, cl client.Client, obj client.Object) (string, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), u); err != nil {
		return "", fmt.Errorf("getting %s: %w", obj.GetName(), err)
	}
	got := u.GetAnnotations()[a.Key]
	if got == a.Malformed || got == "" {
		return "", fmt.Errorf("annotation %s is %q, want karp's own value in place of %q", a.Key, got, a.Malformed)
	}
	return fmt.Sprintf("%s: %q replaced by %q", a.Key, a.Malformed, got), nil
}

// undisturbed checks that karp launched nothing for bad input: no
// NodeClaim of a case's NodePool, no case's pod bound to a node or
// nominated for one.
func undisturbed(ctx context.Context, cl client.Client, results []Result) error {
	pools := map[string]bool{}
	var pods []client.Object
	for _, r := range results {
		if r.Case.Runs {
			continue
		}
		for _, obj := range r.Created {
			switch kindOf(obj) {
			case "NodePool":
				pools[obj.GetName()] = true
			case "Pod":
				pods = append(pods, obj)
			}
		}
	}
	var errs []error
	var claims karpv1.NodeClaimList
	if err := cl.List(ctx, &claims); err != nil {
		return fmt.Errorf("listing NodeClaims: %w", err)
	}
	for _, nc := range claims.Items {
		if pool := nc.Labels[karpv1.NodePoolLabelKey]; pools[pool] {
			errs = append(errs, fmt.Errorf("NodeClaim %s was launched for bad input's NodePool %s", nc.Name, pool))
		}
	}
	for _, obj := range pods {
		var pod corev1.Pod
		if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), &pod); err != nil {
			errs = append(errs, fmt.Errorf("getting pod %s: %w", obj.GetName(), err))
			continue
		}
		if pod.Spec.NodeName != "" {
			errs = append(errs, fmt.Errorf("bad input's pod %s was bound to node %s", pod.Name, pod.Spec.NodeName))
		}
		if err := notNominated(ctx, cl, &pod); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// notNominated checks that karp never nominated the pod for a node: it
// launched nothing for it, not even in a pool of the caller's.
func notNominated(ctx context.Context, cl client.Client, pod *corev1.Pod) error {
	var list eventsv1.EventList
	if err := cl.List(ctx, &list, client.InNamespace(pod.Namespace)); err != nil {
		return fmt.Errorf("listing events: %w", err)
	}
	for _, ev := range list.Items {
		if ev.Regarding.UID == pod.UID && ev.ReportingController == ReportingController && ev.Reason == "Nominated" {
			return fmt.Errorf("bad input's pod %s was nominated: %s", pod.Name, ev.Note)
		}
	}
	return nil
}

// Cleanup deletes every object Run created, in reverse order, and waits
// until they are gone (or ctx is done).
func Cleanup(ctx context.Context, cl client.Client, results []Result) error {
	var created []client.Object
	for _, r := range results {
		created = append(created, r.Created...)
	}
	var errs []error
	for i := len(created) - 1; i >= 0; i-- {
		obj := created[i]
		if err := cl.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", kindOf(obj), obj.GetName(), err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, obj := range created {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
			if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), u); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for bad input to be deleted: %w", err)
	}
	return nil
}

// toUnstructured converts a typed object (with its TypeMeta set) for
// sending, so its kind survives the round trip and the cases can mutate
// what Go types cannot hold; an unstructured object is passed through.
func toUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	if obj.GetObjectKind().GroupVersionKind().Kind == "" {
		return nil, fmt.Errorf("%T %s has no kind set", obj, obj.GetName())
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: m}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

func kindOf(obj client.Object) string { return obj.GetObjectKind().GroupVersionKind().Kind }

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// String is one line on the result.
func (r Result) String() string {
	if r.Err != nil {
		return r.Case.Name + ": " + r.Err.Error()
	}
	return r.Case.Name + ": " + r.Seen
}
