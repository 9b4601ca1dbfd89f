package nodeclass

import (
	"net/http"
	"strings"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// sdkError is an error as the SDK returns a failed call: operation, HTTP
// status, request ID, then the service's code and message.
func sdkError(requestID string) error {
	return &smithy.OperationError{ServiceID: "SSM", OperationName: "GetParameter", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusInternalServerError}},
			Err:      &smithy.GenericAPIError{Code: "InternalServerError", Message: "SSM is down"},
		},
		RequestID: requestID,
	}}
}

// TestRepeatedFailuresWriteOneMessage: the same failure with a new request
// ID each try gives the same condition message, so an outage does not
// rewrite the status (and wake the controller) on every try.
func TestRepeatedFailuresWriteOneMessage(t *testing.T) {
	first, second := sdkError("1b6f3c2e-aaaa"), sdkError("9d0e4f11-bbbb")
	if !strings.Contains(first.Error(), "1b6f3c2e-aaaa") {
		t.Fatalf("the SDK error should carry its request ID: %v", first)
	}
	a, b := stableMessage(first), stableMessage(second)
	if a != b {
		t.Errorf("messages differ between tries:\n%s\n%s", a, b)
	}
	for _, want := range []string{"SSM", "GetParameter", "500", "InternalServerError", "SSM is down"} {
		if !strings.Contains(a, want) {
			t.Errorf("message %q lost %q", a, want)
		}
	}
	if strings.Contains(a, "RequestID") {
		t.Errorf("message %q still names a request ID", a)
	}
}
