package awssim

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
)

// maxQueryBody bounds a query-protocol request body; the largest request karp
// sends (CreateFleet with every override) is far below it.
const maxQueryBody = 8 << 20

// queryProtocol is what distinguishes the EC2 query protocol from the awsquery
// protocol (IAM): both send form-encoded Action=X&Version=V requests and get
// XML back, with different member names and envelopes.
type queryProtocol interface {
	// names maps Go fields to request keys and response elements.
	wireNames
	// supports reports whether the codec knows the wire names of action's
	// input and output types.
	supports(action string) bool
	// writeResponse writes a successful response with body as the result.
	writeResponse(w http.ResponseWriter, action, requestID string, body []byte)
	// writeError writes an error response.
	writeError(w http.ResponseWriter, e *wireError, requestID string)
}

// queryHandler serves a query protocol from a backend whose methods have the
// SDK client's signatures.
type queryHandler struct {
	protocol queryProtocol
	// methods finds a backend method by name (the zero Value when none).
	methods func(name string) reflect.Value
	ids     *requestIDs
}

func newQueryHandler(protocol queryProtocol, backend any) *queryHandler {
	b := reflect.ValueOf(backend)
	methods := func(name string) reflect.Value {
		if !b.IsValid() {
			return reflect.Value{}
		}
		return b.MethodByName(name)
	}
	return &queryHandler{protocol: protocol, methods: methods, ids: &requestIDs{}}
}

// ServeHTTP decodes Action's input from the form, calls the backend method of
// the same name and encodes its output or error.
func (h *queryHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := h.ids.next()
	// Bad input is answered with an error; a panic in the backend (a bug) is
	// answered with InternalError rather than a dropped connection.
	defer func() {
		if p := recover(); p != nil {
			h.protocol.writeError(w, internalError(fmt.Errorf("panic: %v", p)), id)
		}
	}()
	action, out, err := h.serve(r)
	if err != nil {
		h.protocol.writeError(w, asWireError(err), id)
		return
	}
	h.protocol.writeResponse(w, action, id, out)
}

// serve returns the action and its encoded output.
func (h *queryHandler) serve(r *http.Request) (string, []byte, error) {
	if r.Method != http.MethodPost {
		return "", nil, clientError("MalformedQueryString", fmt.Sprintf("method %s is not supported: send a form-encoded POST", r.Method))
	}
	r.Body = http.MaxBytesReader(nil, r.Body, maxQueryBody)
	if err := r.ParseForm(); err != nil {
		return "", nil, clientError("MalformedQueryString", fmt.Sprintf("reading the form: %v", err))
	}
	form := r.PostForm
	action := form.Get("Action")
	if action == "" {
		return "", nil, clientError("MissingAction", "the request has no Action parameter")
	}
	method, err := h.method(action)
	if err != nil {
		return action, nil, err
	}
	in := reflect.New(method.Type().In(1).Elem())
	delete(form, "Action")
	delete(form, "Version")
	if err := decodeForm(form, h.protocol, in.Elem()); err != nil {
		return action, nil, err
	}
	results := method.Call([]reflect.Value{reflect.ValueOf(r.Context()), in})
	if errv := results[1]; !errv.IsNil() {
		return action, nil, errv.Interface().(error)
	}
	if results[0].IsNil() {
		return action, nil, internalError(fmt.Errorf("%s returned neither an output nor an error", action))
	}
	out, err := encodeXML(h.protocol, results[0].Elem())
	return action, out, err
}

var (
	contextType = reflect.TypeOf((*context.Context)(nil)).Elem()
	errorType   = reflect.TypeOf((*error)(nil)).Elem()
)

// method finds the backend method named action with the SDK client's shape:
// func(context.Context, *<action>Input, ...func(*Options)) (*<action>Output, error).
func (h *queryHandler) method(action string) (reflect.Value, error) {
	invalid := clientError("InvalidAction", fmt.Sprintf("The action %s is not valid for this web service.", action))
	if strings.ContainsAny(action, ". ") {
		return reflect.Value{}, invalid
	}
	m := h.methods(action)
	if !m.IsValid() {
		return reflect.Value{}, invalid
	}
	t := m.Type()
	if t.NumIn() != 3 || !t.IsVariadic() || t.In(0) != contextType || t.NumOut() != 2 || t.Out(1) != errorType ||
		!isStructPtr(t.In(1), action+"Input") || !isStructPtr(t.Out(0), action+"Output") {
		return reflect.Value{}, invalid
	}
	if !h.protocol.supports(action) {
		return reflect.Value{}, clientError("InvalidAction",
			fmt.Sprintf("The action %s has no wire names in the simulator: add it to the operations of hack/awsquerynames.", action))
	}
	return m, nil
}

func isStructPtr(t reflect.Type, name string) bool {
	return t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && t.Elem().Name() == name
}

// requestIDs hands out distinct request IDs shaped like AWS's.
type requestIDs struct{ n atomic.Uint64 }

func (r *requestIDs) next() string {
	n := r.n.Add(1)
	return fmt.Sprintf("5a1e0000-0000-4000-8000-%012x", n)
}
