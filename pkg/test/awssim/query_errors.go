package awssim

import (
	"bytes"
	"encoding/xml"
	"errors"

	"github.com/aws/smithy-go"
)

// wireError is an error as the protocol reports it.
type wireError struct {
	code    string
	message string
	// server marks a fault of the service rather than of the request.
	server bool
}

func (e *wireError) Error() string { return e.code + ": " + e.message }

func clientError(code, message string) *wireError {
	return &wireError{code: code, message: message}
}

func internalError(err error) *wireError {
	return &wireError{code: "InternalError", message: err.Error(), server: true}
}

// asWireError keeps the code and message of an API error (the fakes return
// smithy.APIError values) and reports anything else as InternalError.
func asWireError(err error) *wireError {
	var we *wireError
	if errors.As(err, &we) {
		return we
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return &wireError{code: api.ErrorCode(), message: api.ErrorMessage(), server: api.ErrorFault() == smithy.FaultServer}
	}
	return internalError(err)
}

// escape makes s safe as XML character data.
func escape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
