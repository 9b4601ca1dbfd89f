package awssim

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// Router is the one http.Handler of the simulated AWS. It routes each
// request to the handler of the service named in its SigV4 credential scope
// and can be told to throttle or hold named operations, which is how tests
// and local runs inject the failures a real cloud produces. It is safe for
// concurrent use.
type Router struct {
	handlers map[string]http.Handler

	mu        sync.Mutex
	throttles map[operationKey]int
	holds     map[operationKey]int
	calls     map[operationKey]int
	// invocations counts first attempts only (see Invocations).
	invocations map[operationKey]int
}

type operationKey struct{ service, operation string }

// NewRouter returns a Router serving handlers keyed by SigV4 service name
// (ec2, iam, ssm, sqs, pricing, eks, arc-zonal-shift).
func NewRouter(handlers map[string]http.Handler) *Router {
	copied := make(map[string]http.Handler, len(handlers))
	for name, h := range handlers {
		copied[name] = h
	}
	return &Router{
		handlers:  copied,
		throttles: map[operationKey]int{},
		holds:     map[operationKey]int{},
		calls:     map[operationKey]int{},

		invocations: map[operationKey]int{},
	}
}

// AnyOperation, as the operation of Throttle or HoldAfter, stands for every
// operation of the service: Throttle("ec2", AnyOperation, 5) throttles the
// next five EC2 calls, whatever they are. A fault queued for the exact
// operation is consumed first.
const AnyOperation = "*"

// Throttle makes the next n calls of operation on service fail with the
// service's real throttling error (RequestLimitExceeded for ec2, Throttling
// for iam, ...), written before the backend is called, so the SDK's
// standard retryer backs off and retries them as it would against AWS.
func (r *Router) Throttle(service, operation string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.throttles[operationKey{service, operation}] += n
}

// HoldAfter makes the next n calls of operation on service run on the
// backend (its state changes), then withholds the response until the
// client goes away: the effect of a controller killed between a call and
// acting on its result.
func (r *Router) HoldAfter(service, operation string, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holds[operationKey{service, operation}] += n
}

// Calls returns how many requests for operation on service reached the
// router, throttled and held ones included.
func (r *Router) Calls(service, operation string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[operationKey{service, operation}]
}

// Invocations returns how many operations the clients invoked on service:
// the requests that reached the router less the SDK's retries of them
// (a request whose amz-sdk-request header names an attempt after the
// first). A retry is the transport's doing, not the caller's: on a loaded
// machine a request can time out and be sent again.
func (r *Router) Invocations(service, operation string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.invocations[operationKey{service, operation}]
}

// firstAttempt reports whether the request is not a retry of an earlier
// one by the SDK's retryer ("attempt=N; max=M").
func firstAttempt(req *http.Request) bool {
	attempt, ok := strings.CutPrefix(req.Header.Get("Amz-Sdk-Request"), "attempt=")
	return !ok || strings.HasPrefix(attempt, "1;") || attempt == "1"
}

// ServeHTTP routes req by the service of its credential scope.
func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	service, ok := signingService(req.Header.Get("Authorization"))
	if !ok {
		writeRouterError(w, http.StatusBadRequest, "MissingAuthenticationTokenException",
			"request has no AWS Signature Version 4 Authorization header with a credential scope "+
				"(Credential=<key>/<date>/<region>/<service>/aws4_request); the simulated AWS routes by its service")
		return
	}
	h, ok := r.handlers[service]
	if !ok {
		writeRouterError(w, http.StatusNotFound, "UnknownServiceException",
			"service "+service+" is not served by the simulated AWS (served: "+strings.Join(r.services(), ", ")+")")
		return
	}
	key := operationKey{service, operationOf(h, req)}
	throttled, held := r.admit(key, firstAttempt(req))
	switch {
	case throttled:
		writeThrottle(w, service, key.operation)
	case held:
		// The backend acts, the answer is lost: nothing is written until the
		// client gives up and the request's context ends.
		h.ServeHTTP(newDiscardWriter(), req)
		// A body read to its end lets the server notice the client going
		// away, which ends the request's context.
		_, _ = io.Copy(io.Discard, req.Body)
		<-req.Context().Done()
	default:
		h.ServeHTTP(w, req)
	}
}

// admit counts a call and consumes a queued throttle or, failing that, a
// queued hold for it.
func (r *Router) admit(key operationKey, first bool) (throttled, held bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[key]++
	if first {
		r.invocations[key]++
	}
	anyOperation := operationKey{key.service, AnyOperation}
	if take(r.throttles, key, anyOperation) {
		return true, false
	}
	return false, take(r.holds, key, anyOperation)
}

// take consumes one queued fault of the first key that has one.
func take(queued map[operationKey]int, keys ...operationKey) bool {
	for _, k := range keys {
		if queued[k] > 0 {
			queued[k]--
			return true
		}
	}
	return false
}

func (r *Router) services() []string {
	names := make([]string, 0, len(r.handlers))
	for name := range r.handlers {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// signingService returns the service of a SigV4 Authorization header:
// "AWS4-HMAC-SHA256 Credential=AKID/20261125/us-west-2/ec2/aws4_request,
// SignedHeaders=..., Signature=...".
func signingService(authorization string) (string, bool) {
	_, rest, ok := strings.Cut(authorization, "Credential=")
	if !ok {
		return "", false
	}
	credential, _, _ := strings.Cut(rest, ",")
	scope := strings.Split(strings.TrimSpace(credential), "/")
	if len(scope) != 5 || scope[4] != "aws4_request" || scope[3] == "" {
		return "", false
	}
	return scope[3], true
}

// operationNamer is implemented by handlers whose operation is not carried
// in an X-Amz-Target header or an Action form field (REST protocols).
type operationNamer interface {
	operation(req *http.Request) string
}

// operationOf names the operation of req: the X-Amz-Target of the JSON
// protocols, the Action of the query protocols (read from the body, which is
// restored for the handler), or what a REST handler resolves from the path.
func operationOf(h http.Handler, req *http.Request) string {
	if target := req.Header.Get("X-Amz-Target"); target != "" {
		return target[strings.LastIndex(target, ".")+1:]
	}
	if strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") && req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			return ""
		}
		if form, err := url.ParseQuery(string(body)); err == nil {
			return form.Get("Action")
		}
		return ""
	}
	if namer, ok := h.(operationNamer); ok {
		return namer.operation(req)
	}
	return ""
}

// discardWriter is the ResponseWriter of a held call: it accepts and drops
// the response.
type discardWriter struct{ header http.Header }

func newDiscardWriter() *discardWriter { return &discardWriter{header: http.Header{}} }

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
