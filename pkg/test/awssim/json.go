package awssim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
)

// jsonHandler serves an awsJson 1.0 or 1.1 service (SSM, SQS, Pricing):
// POST / with X-Amz-Target: <prefix>.<Operation> and the input's members
// as a JSON object.
type jsonHandler struct {
	targetPrefix string
	contentType  string
	ops          map[string]reflect.Value
}

// NewJSONHandler serves backend's SDK-signature methods in the awsJson
// protocol of jsonVersion ("1.0" or "1.1") under targetPrefix (AmazonSSM,
// AmazonSQS, AWSPriceListService). Errors are {"__type", "message"} with
// HTTP 400, or 500 for server faults and errors that are not AWS API
// errors.
func NewJSONHandler(targetPrefix, jsonVersion string, backend any) http.Handler {
	return &jsonHandler{
		targetPrefix: targetPrefix,
		contentType:  "application/x-amz-json-" + jsonVersion,
		ops:          operations(backend),
	}
}

func (h *jsonHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		h.fail(w, serviceError{shape: "UnknownOperationException", code: "UnknownOperationException",
			message: fmt.Sprintf("%s takes POST requests, not %s", h.targetPrefix, req.Method)})
		return
	}
	target := req.Header.Get("X-Amz-Target")
	operation, ok := strings.CutPrefix(target, h.targetPrefix+".")
	if !ok {
		h.fail(w, serviceError{shape: "UnknownOperationException", code: "UnknownOperationException",
			message: fmt.Sprintf("X-Amz-Target %q is not an operation of %s", target, h.targetPrefix)})
		return
	}
	method, ok := h.ops[operation]
	if !ok {
		h.fail(w, serviceError{shape: "UnknownOperationException", code: "UnknownOperationException",
			message: fmt.Sprintf("operation %s is not served by the simulated %s (served: %s)", operation, h.targetPrefix, operationNames(h.ops))})
		return
	}
	in, err := h.decodeInput(req, method.Type().In(1).Elem(), operation)
	if err != nil {
		h.fail(w, serviceError{shape: "SerializationException", code: "SerializationException", message: err.Error()})
		return
	}
	out, err := invoke(req.Context(), method, in)
	if err != nil {
		h.fail(w, classify(err))
		return
	}
	body, err := encodeJSON(out, awsJSONName)
	if err != nil {
		h.fail(w, classify(fmt.Errorf("encoding %s output: %w", operation, err)))
		return
	}
	if body == nil {
		body = map[string]any{}
	}
	w.Header().Set("Content-Type", h.contentType)
	w.Header().Set("X-Amzn-RequestId", nextRequestID())
	writeJSON(w, body)
}

// maxRequestBytes bounds a request body; the largest inputs karp sends are
// a few kilobytes.
const maxRequestBytes = 8 << 20

// decodeInput reads the request body into a new *inType.
func (h *jsonHandler) decodeInput(req *http.Request, inType reflect.Type, operation string) (reflect.Value, error) {
	payload, err := io.ReadAll(io.LimitReader(req.Body, maxRequestBytes+1))
	if err == nil && len(payload) > maxRequestBytes {
		err = fmt.Errorf("larger than %d bytes", maxRequestBytes)
	}
	if err != nil {
		return reflect.Value{}, fmt.Errorf("reading the %s.%s request body: %w", h.targetPrefix, operation, err)
	}
	in := reflect.New(inType)
	if len(bytes.TrimSpace(payload)) == 0 {
		return in, nil
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return reflect.Value{}, fmt.Errorf("malformed JSON body for %s.%s: %w", h.targetPrefix, operation, err)
	}
	if _, ok := raw.(map[string]any); !ok {
		return reflect.Value{}, fmt.Errorf("the body of %s.%s must be a JSON object, got %s", h.targetPrefix, operation, describe(raw))
	}
	if err := decodeJSON(in.Elem(), raw, awsJSONName, ""); err != nil {
		return reflect.Value{}, fmt.Errorf("decoding %s.%s input: %w", h.targetPrefix, operation, err)
	}
	return in, nil
}

func (h *jsonHandler) fail(w http.ResponseWriter, se serviceError) {
	w.Header().Set("Content-Type", h.contentType)
	w.Header().Set("X-Amzn-RequestId", nextRequestID())
	if se.code != se.shape {
		w.Header().Set("X-Amzn-Query-Error", se.code+";"+se.fault())
	}
	w.WriteHeader(se.status())
	writeJSON(w, se.body(awsJSONName, true))
}
