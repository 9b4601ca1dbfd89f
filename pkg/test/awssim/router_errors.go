package awssim

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"sync/atomic"
)

// protocol is the wire shape a service's errors take.
type protocol int

const (
	// protocolEC2Query: XML <Response><Errors><Error><Code>.
	protocolEC2Query protocol = iota
	// protocolAWSQuery: XML <ErrorResponse><Error><Type><Code>.
	protocolAWSQuery
	// protocolAWSJSON: JSON {"__type", "message"}, plus X-Amzn-Query-Error
	// for query-compatible services (SQS).
	protocolAWSJSON
	// protocolRESTJSON: the code in the X-Amzn-ErrorType header, JSON
	// {"message"} body.
	protocolRESTJSON
)

// throttling is how a service says "slow down": the code is one the SDK's
// standard retryer classifies as throttling (aws/retry DefaultThrottleErrorCodes),
// so it backs off and retries.
type throttling struct {
	protocol protocol
	status   int
	code     string
	message  string
}

// throttlingByService holds each simulated service's real throttling error.
var throttlingByService = map[string]throttling{
	"ec2":     {protocolEC2Query, http.StatusServiceUnavailable, "RequestLimitExceeded", "Request limit exceeded."},
	"iam":     {protocolAWSQuery, http.StatusBadRequest, "Throttling", "Rate exceeded"},
	"ssm":     {protocolAWSJSON, http.StatusBadRequest, "ThrottlingException", "Rate exceeded"},
	"sqs":     {protocolAWSJSON, http.StatusBadRequest, "RequestThrottled", "Rate exceeded"},
	"pricing": {protocolAWSJSON, http.StatusBadRequest, "ThrottlingException", "Rate exceeded"},
	"eks":     {protocolRESTJSON, http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded"},
}

// writeThrottle answers a throttled call in service's protocol; a service
// missing from the table is answered as AWS JSON ThrottlingException.
func writeThrottle(w http.ResponseWriter, service, operation string) {
	t, ok := throttlingByService[service]
	if !ok {
		t = throttling{protocolAWSJSON, http.StatusBadRequest, "ThrottlingException", "Rate exceeded"}
	}
	message := fmt.Sprintf("%s (%s.%s)", t.message, service, operation)
	writeProtocolError(w, t.protocol, t.status, t.code, t.code, message, true)
}

// writeProtocolError writes an error in the shape of p. shape is the
// error's modeled name (JSON __type); code is what the SDK reports as
// ErrorCode, which differs from shape only for query-compatible JSON
// services. sender says whose fault it is (Sender or Receiver).
func writeProtocolError(w http.ResponseWriter, p protocol, status int, shape, code, message string, sender bool) {
	requestID := nextRequestID()
	switch p {
	case protocolEC2Query:
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
		w.WriteHeader(status)
		type ec2Error struct {
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		}
		writeXML(w, struct {
			XMLName   xml.Name   `xml:"Response"`
			Errors    []ec2Error `xml:"Errors>Error"`
			RequestID string     `xml:"RequestID"`
		}{Errors: []ec2Error{{code, message}}, RequestID: requestID})
	case protocolAWSQuery:
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(status)
		type queryError struct {
			Type    string `xml:"Type"`
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		}
		writeXML(w, struct {
			XMLName   xml.Name   `xml:"ErrorResponse"`
			Error     queryError `xml:"Error"`
			RequestID string     `xml:"RequestId"`
		}{Error: queryError{faultName(sender), code, message}, RequestID: requestID})
	case protocolRESTJSON:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", code)
		w.Header().Set("X-Amzn-RequestId", requestID)
		w.WriteHeader(status)
		writeJSON(w, map[string]any{"message": message})
	default:
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("X-Amzn-RequestId", requestID)
		if code != shape {
			w.Header().Set("X-Amzn-Query-Error", code+";"+faultName(sender))
		}
		w.WriteHeader(status)
		writeJSON(w, map[string]any{"__type": shape, "message": message})
	}
}

// writeRouterError answers a request the router cannot route: no service
// is known yet, so the error is plain JSON with the code in both the body
// and the X-Amzn-ErrorType header.
func writeRouterError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	writeJSON(w, map[string]any{"__type": code, "message": message})
}

func faultName(sender bool) string {
	if sender {
		return "Sender"
	}
	return "Receiver"
}

func writeXML(w http.ResponseWriter, v any) {
	_, _ = w.Write([]byte(xml.Header))
	// The values are fixed structs of strings: encoding cannot fail, and a
	// failed write means the client has gone.
	_ = xml.NewEncoder(w).Encode(v)
}

func writeJSON(w http.ResponseWriter, v any) {
	// A failed write means the client has gone; there is no one to tell.
	_ = json.NewEncoder(w).Encode(v)
}

var requestCounter atomic.Uint64

// nextRequestID returns a request ID shaped as AWS's (a UUID).
func nextRequestID() string {
	n := requestCounter.Add(1)
	return fmt.Sprintf("5a1e0000-0000-4000-8000-%012x", n)
}
