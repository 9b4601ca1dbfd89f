package awssim

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
)

// restRoute is one restJson1 operation: its method, its path with {label}
// segments bound to the input member of the same name, and its name.
type restRoute struct {
	method    string
	path      []string
	operation string
}

// restErrorStatus is the HTTP status restJson1 services answer each error
// code with; other client errors are 400 and server faults 500.
var restErrorStatus = map[string]int{
	"ResourceNotFoundException":   http.StatusNotFound,
	"AccessDeniedException":       http.StatusForbidden,
	"ResourceInUseException":      http.StatusConflict,
	"ConflictException":           http.StatusConflict,
	"ValidationException":         http.StatusBadRequest,
	"ServiceUnavailableException": http.StatusServiceUnavailable,
	"ThrottlingException":         http.StatusTooManyRequests,
}

// restHandler serves a restJson1 service's operations, each bound to a
// route, from a backend with SDK signatures: the input's path labels are
// its only members (the operations served take no body), the output is a
// camelCase JSON body, and errors carry their code in X-Amzn-ErrorType.
type restHandler struct {
	// service names the service in error messages ("EKS").
	service string
	routes  []restRoute
	ops     map[string]reflect.Value
}

func newRESTHandler(service string, routes []restRoute, backend any) *restHandler {
	return &restHandler{service: service, routes: routes, ops: operations(backend)}
}

// operation names req's operation for the router.
func (h *restHandler) operation(req *http.Request) string {
	if route, _, ok := h.match(req); ok {
		return route.operation
	}
	return ""
}

// match finds the route of req and its path labels; a label is one
// escaped path segment (the SDK escapes a "/" inside it as %2F).
func (h *restHandler) match(req *http.Request) (restRoute, map[string]string, bool) {
	segments := strings.Split(strings.Trim(req.URL.EscapedPath(), "/"), "/")
	for _, route := range h.routes {
		if route.method != req.Method || len(route.path) != len(segments) {
			continue
		}
		labels, ok := map[string]string{}, true
		for i, want := range route.path {
			label, isLabel := strings.CutPrefix(want, "{")
			if !isLabel {
				ok = ok && want == segments[i]
				continue
			}
			value, err := url.PathUnescape(segments[i])
			ok = ok && err == nil && value != ""
			labels[strings.TrimSuffix(label, "}")] = value
		}
		if ok {
			return route, labels, true
		}
	}
	return restRoute{}, nil, false
}

func (h *restHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	route, labels, ok := h.match(req)
	if !ok {
		h.fail(w, http.StatusNotFound, serviceError{shape: "UnknownOperationException", code: "UnknownOperationException",
			message: fmt.Sprintf("%s %s is not an %s operation served by the simulated AWS", req.Method, req.URL.Path, h.service)})
		return
	}
	method, ok := h.ops[route.operation]
	if !ok {
		h.fail(w, http.StatusNotFound, serviceError{shape: "UnknownOperationException", code: "UnknownOperationException",
			message: fmt.Sprintf("operation %s is not served by the simulated %s backend (served: %s)", route.operation, h.service, operationNames(h.ops))})
		return
	}
	in := reflect.New(method.Type().In(1).Elem())
	for label, value := range labels {
		field := in.Elem().FieldByName(strings.ToUpper(label[:1]) + label[1:])
		if !field.IsValid() || field.Type() != reflect.TypeOf((*string)(nil)) {
			h.fail(w, http.StatusInternalServerError, serviceError{shape: "InternalFailure", code: "InternalFailure", server: true,
				message: fmt.Sprintf("%s has no string member for the path label %s", in.Elem().Type(), label)})
			return
		}
		field.Set(reflect.ValueOf(&value))
	}
	out, err := invoke(req.Context(), method, in)
	if err != nil {
		se := classify(err)
		h.fail(w, restStatus(se), se)
		return
	}
	body, err := encodeJSON(out, restJSONName)
	if err != nil {
		se := classify(fmt.Errorf("encoding %s output: %w", route.operation, err))
		h.fail(w, restStatus(se), se)
		return
	}
	if body == nil {
		body = map[string]any{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-RequestId", nextRequestID())
	writeJSON(w, body)
}

func restStatus(se serviceError) int {
	if status, ok := restErrorStatus[se.code]; ok {
		return status
	}
	return se.status()
}

func (h *restHandler) fail(w http.ResponseWriter, status int, se serviceError) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", se.shape)
	w.Header().Set("X-Amzn-RequestId", nextRequestID())
	w.WriteHeader(status)
	writeJSON(w, se.body(restJSONName, false))
}
