package awssim

import (
	"net/http"
	"reflect"

	"github.com/aws/smithy-go/middleware"
)

// iamNamespace is the XML namespace of the IAM API version the SDK speaks.
const iamNamespace = "https://iam.amazonaws.com/doc/2010-05-08/"

// NewIAMHandler serves the awsquery protocol of IAM (form POSTs of
// Action=X&Version=2010-05-08, XML responses) from backend, usually a
// *fake.IAM whose methods have the iam.Client methods' signatures.
//
// IAM's model renames nothing (its schemas carry no xmlName or xmlFlattened
// trait), so a member's wire name is its Go field name and lists are sent as
// Member.member.N and returned as <Member><member>..</member></Member>.
func NewIAMHandler(backend any) http.Handler {
	return newQueryHandler(iamProtocol{}, backend)
}

type iamProtocol struct{}

var metadataType = reflect.TypeOf(middleware.Metadata{})

func (iamProtocol) supports(string) bool { return true }

func (iamProtocol) queryKey(_ reflect.Type, f reflect.StructField) string {
	if f.Type == metadataType {
		return ""
	}
	return f.Name
}

func (iamProtocol) listItems(key string) string { return key + ".member" }

func (iamProtocol) xmlElement(_ reflect.Type, f reflect.StructField) (xmlName, bool) {
	if f.Type == metadataType {
		return xmlName{}, false
	}
	return xmlName{name: f.Name, item: "member"}, true
}

func (iamProtocol) writeResponse(w http.ResponseWriter, action, requestID string, body []byte) {
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", requestID)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`<` + action + `Response xmlns="` + iamNamespace + `"><` + action + `Result>`))
	_, _ = w.Write(body)
	_, _ = w.Write([]byte(`</` + action + `Result><ResponseMetadata><RequestId>` + requestID +
		`</RequestId></ResponseMetadata></` + action + `Response>`))
}

func (iamProtocol) writeError(w http.ResponseWriter, e *wireError, requestID string) {
	typ := "Sender"
	if e.server {
		typ = "Receiver"
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", requestID)
	w.WriteHeader(iamStatus(e))
	_, _ = w.Write([]byte(`<ErrorResponse xmlns="` + iamNamespace + `"><Error><Type>` + typ + `</Type><Code>` +
		escape(e.code) + `</Code><Message>` + escape(e.message) + `</Message></Error><RequestId>` + requestID +
		`</RequestId></ErrorResponse>`))
}

// iamStatus is the HTTP status IAM answers an error with (the codes' httpError
// traits in the IAM model).
func iamStatus(e *wireError) int {
	switch e.code {
	case "NoSuchEntity":
		return http.StatusNotFound
	case "EntityAlreadyExists", "DeleteConflict", "ConcurrentModification":
		return http.StatusConflict
	case "ServiceFailure", "InternalError", "InternalFailure":
		return http.StatusInternalServerError
	case "ServiceUnavailable":
		return http.StatusServiceUnavailable
	}
	if e.server {
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}
