package awssim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"

	"github.com/aws/smithy-go"
)

var (
	sdkContextType = reflect.TypeOf((*context.Context)(nil)).Elem()
	sdkErrorType   = reflect.TypeOf((*error)(nil)).Elem()
)

// operations returns the methods of backend that have an SDK client's
// operation signature, func(context.Context, *XInput, ...func(*Options))
// (*XOutput, error), by name. Other methods (test helpers such as
// fake.SSM's PutParameter(name, value)) are not served.
func operations(backend any) map[string]reflect.Value {
	v := reflect.ValueOf(backend)
	ops := map[string]reflect.Value{}
	for i := range v.NumMethod() {
		m := v.Method(i)
		t := m.Type()
		if t.NumIn() != 3 || t.NumOut() != 2 || !t.IsVariadic() ||
			t.In(0) != sdkContextType || !isStructPointer(t.In(1)) ||
			!isStructPointer(t.Out(0)) || t.Out(1) != sdkErrorType {
			continue
		}
		ops[v.Type().Method(i).Name] = m
	}
	return ops
}

func isStructPointer(t reflect.Type) bool {
	return t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct
}

func operationNames(ops map[string]reflect.Value) string {
	names := make([]string, 0, len(ops))
	for name := range ops {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// invoke calls an SDK-signature method with in and returns its output. A
// panicking backend is an InternalFailure error, not a dead server.
func invoke(ctx context.Context, method reflect.Value, in reflect.Value) (out reflect.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &smithy.GenericAPIError{Code: "InternalFailure", Message: fmt.Sprintf("the simulated backend panicked: %v", r), Fault: smithy.FaultServer}
		}
	}()
	results := method.Call([]reflect.Value{reflect.ValueOf(ctx), in})
	if e := results[1].Interface(); e != nil {
		return reflect.Value{}, e.(error)
	}
	return results[0], nil
}

// serviceError is an error as the wire carries it.
type serviceError struct {
	// shape is the modeled error name (a JSON __type): the SDK error
	// type's name for typed errors, else the code.
	shape string
	// code is what the SDK reports as ErrorCode; it differs from shape for
	// query-compatible services (SQS's AWS.SimpleQueueService.NonExistentQueue).
	code    string
	message string
	server  bool
	// members are the typed error's other modeled members, by Go name.
	members reflect.Value
}

// classify turns a backend error into its wire form: a smithy.APIError
// keeps its code, message and fault; anything else is an InternalFailure
// (a bug in the backend, reported as AWS reports its own).
func classify(err error) serviceError {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return serviceError{shape: "InternalFailure", code: "InternalFailure", message: err.Error(), server: true}
	}
	se := serviceError{
		shape:   apiErr.ErrorCode(),
		code:    apiErr.ErrorCode(),
		message: apiErr.ErrorMessage(),
		server:  apiErr.ErrorFault() == smithy.FaultServer,
	}
	if t := reflect.TypeOf(apiErr); isStructPointer(t) && strings.HasSuffix(t.Elem().PkgPath(), "/types") {
		se.shape = t.Elem().Name()
		se.members = reflect.ValueOf(apiErr).Elem()
		// A typed error with no code override carries its shape's code;
		// for query-compatible services that is the model's query code.
		if se.code == se.shape {
			if code, ok := queryErrorCode(apiErr); ok {
				se.code = code
			}
		}
	}
	return se
}

// body is the JSON body of the error: its members other than the message
// (named by name), then message and, for awsJson, __type.
func (se serviceError) body(name memberName, withType bool) map[string]any {
	out := map[string]any{}
	if se.members.IsValid() {
		if members, err := encodeStruct(se.members, name); err == nil {
			out = members
		}
		delete(out, name("Message"))
	}
	out["message"] = se.message
	if withType {
		out["__type"] = se.shape
	}
	return out
}

func (se serviceError) status() int {
	if se.server {
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

func (se serviceError) fault() string { return faultName(!se.server) }
