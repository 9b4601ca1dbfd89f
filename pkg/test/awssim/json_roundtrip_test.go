package awssim

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go/middleware"
)

// fillMembers sets every modeled member of v, recursively, to a non-zero value
// derived from its path, so a member the wire drops or misnames shows up as
// a difference. Unions (interfaces) are left nil: the services served here
// use none in the operations karp calls.
func fillMembers(v reflect.Value, path string, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 8 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fillMembers(v.Elem(), path, depth+1)
	case reflect.Struct:
		if v.Type() == sdkTimeType {
			// Milliseconds: the precision of the JSON protocols' epoch seconds.
			v.Set(reflect.ValueOf(time.UnixMilli(1764072000123 + int64(len(path))).UTC()))
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if skippedField(f) {
				continue
			}
			fillMembers(v.Field(i), path+"."+f.Name, depth+1)
		}
	case reflect.Slice:
		if v.Type().Elem() == byteType {
			v.SetBytes([]byte("blob " + path))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fillMembers(s.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for _, k := range []string{"k1", "k2"} {
			e := reflect.New(v.Type().Elem()).Elem()
			fillMembers(e, path+"["+k+"]", depth+1)
			m.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
		}
		v.Set(m)
	case reflect.String:
		v.SetString("value of " + path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(10 + len(path)%90))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.25 + float64(len(path)))
	}
}

func filled[T any]() *T {
	v := new(T)
	fillMembers(reflect.ValueOf(v).Elem(), reflect.TypeFor[T]().Name(), 0)
	return v
}

// recorder keeps the last input each operation received and answers with
// a filled output.
type recorder struct {
	mu      sync.Mutex
	inputs  map[string]any
	outputs map[string]any
}

func newRecorder() *recorder {
	return &recorder{inputs: map[string]any{}, outputs: map[string]any{}}
}

func answer[In, Out any](r *recorder, operation string, in *In) (*Out, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inputs[operation] = in
	out := filled[Out]()
	r.outputs[operation] = out
	return out, nil
}

func (r *recorder) input(operation string) any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inputs[operation]
}

func (r *recorder) output(operation string) any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outputs[operation]
}

// The recording backends have the SDK clients' signatures, as the fakes do.
type ssmRecorder struct{ *recorder }

func (r ssmRecorder) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	return answer[ssm.GetParameterInput, ssm.GetParameterOutput](r.recorder, "GetParameter", in)
}

func (r ssmRecorder) GetParameters(_ context.Context, in *ssm.GetParametersInput, _ ...func(*ssm.Options)) (*ssm.GetParametersOutput, error) {
	return answer[ssm.GetParametersInput, ssm.GetParametersOutput](r.recorder, "GetParameters", in)
}

func (r ssmRecorder) GetParametersByPath(_ context.Context, in *ssm.GetParametersByPathInput, _ ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error) {
	return answer[ssm.GetParametersByPathInput, ssm.GetParametersByPathOutput](r.recorder, "GetParametersByPath", in)
}

func (r ssmRecorder) PutParameter(_ context.Context, in *ssm.PutParameterInput, _ ...func(*ssm.Options)) (*ssm.PutParameterOutput, error) {
	return answer[ssm.PutParameterInput, ssm.PutParameterOutput](r.recorder, "PutParameter", in)
}

type pricingRecorder struct{ *recorder }

func (r pricingRecorder) GetProducts(_ context.Context, in *pricing.GetProductsInput, _ ...func(*pricing.Options)) (*pricing.GetProductsOutput, error) {
	return answer[pricing.GetProductsInput, pricing.GetProductsOutput](r.recorder, "GetProducts", in)
}

type sqsRecorder struct{ *recorder }

func (r sqsRecorder) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return answer[sqs.ReceiveMessageInput, sqs.ReceiveMessageOutput](r.recorder, "ReceiveMessage", in)
}

func (r sqsRecorder) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return answer[sqs.DeleteMessageInput, sqs.DeleteMessageOutput](r.recorder, "DeleteMessage", in)
}

func (r sqsRecorder) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return answer[sqs.SendMessageInput, sqs.SendMessageOutput](r.recorder, "SendMessage", in)
}

func (r sqsRecorder) GetQueueUrl(_ context.Context, in *sqs.GetQueueUrlInput, _ ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return answer[sqs.GetQueueUrlInput, sqs.GetQueueUrlOutput](r.recorder, "GetQueueUrl", in)
}

type eksRecorder struct{ *recorder }

func (r eksRecorder) DescribeCluster(_ context.Context, in *eks.DescribeClusterInput, _ ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	return answer[eks.DescribeClusterInput, eks.DescribeClusterOutput](r.recorder, "DescribeCluster", in)
}

// withoutMetadata returns out with its ResultMetadata (request ID, ...)
// cleared: it is transport metadata, not a modeled member.
func withoutMetadata[T any](out *T) *T {
	if out == nil {
		return nil
	}
	reflect.ValueOf(out).Elem().FieldByName("ResultMetadata").Set(reflect.ValueOf(middleware.Metadata{}))
	return out
}

// TestJSONRoundTrip sends every member of each operation's input through
// the real SDK clients and the handlers, and checks the backend decoded
// exactly what was sent and the client decoded exactly what the backend
// answered.
func TestJSONRoundTrip(t *testing.T) {
	rec := newRecorder()
	router := NewRouter(map[string]http.Handler{
		"ssm":     NewJSONHandler("AmazonSSM", "1.1", ssmRecorder{rec}),
		"pricing": NewJSONHandler("AWSPriceListService", "1.1", pricingRecorder{rec}),
		"sqs":     NewJSONHandler("AmazonSQS", "1.0", sqsRecorder{rec}),
		"eks":     NewEKSHandler(eksRecorder{rec}),
	})
	cfg := clientConfig(listen(t, router), nil)
	ssmClient := ssm.NewFromConfig(cfg)
	pricingClient := pricing.NewFromConfig(cfg, func(o *pricing.Options) { o.Region = "us-east-1" })
	// Filled outputs carry arbitrary MD5 members; checksums are checked
	// against a real queue in the SQS tests.
	sqsClient := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.DisableMessageChecksumValidation = true })
	eksClient := eks.NewFromConfig(cfg)

	for operation, call := range map[string]func(ctx context.Context) (sent, got any, err error){
		"GetParameter":        sdkRoundTrip(ssmClient.GetParameter),
		"GetParameters":       sdkRoundTrip(ssmClient.GetParameters),
		"GetParametersByPath": sdkRoundTrip(ssmClient.GetParametersByPath),
		"PutParameter":        sdkRoundTrip(ssmClient.PutParameter),
		"GetProducts":         sdkRoundTrip(pricingClient.GetProducts),
		"ReceiveMessage":      sdkRoundTrip(sqsClient.ReceiveMessage),
		"DeleteMessage":       sdkRoundTrip(sqsClient.DeleteMessage),
		"SendMessage":         sdkRoundTrip(sqsClient.SendMessage),
		"GetQueueUrl":         sdkRoundTrip(sqsClient.GetQueueUrl),
	} {
		t.Run(operation, func(t *testing.T) {
			sent, got, err := call(t.Context())
			if err != nil {
				t.Fatalf("%s: %v", operation, err)
			}
			if in := rec.input(operation); !reflect.DeepEqual(in, sent) {
				t.Errorf("%s input:\n backend got %+v\n client sent %+v", operation, in, sent)
			}
			if want := rec.output(operation); !reflect.DeepEqual(got, want) {
				t.Errorf("%s output:\n client got %+v\n backend sent %+v", operation, got, want)
			}
		})
	}

	// DescribeCluster carries only the path label: its whole input is the name.
	t.Run("DescribeCluster", func(t *testing.T) {
		sent := &eks.DescribeClusterInput{Name: ptrTo("karp demo/1")}
		got, err := eksClient.DescribeCluster(t.Context(), sent)
		if err != nil {
			t.Fatalf("DescribeCluster: %v", err)
		}
		if in := rec.input("DescribeCluster"); !reflect.DeepEqual(in, sent) {
			t.Errorf("DescribeCluster input: backend got %+v, client sent %+v", in, sent)
		}
		if want := rec.output("DescribeCluster"); !reflect.DeepEqual(withoutMetadata(got), want) {
			t.Errorf("DescribeCluster output:\n client got %+v\n backend sent %+v", got, want)
		}
	})
}

// sdkRoundTrip calls an SDK client method with a filled input and returns
// what was sent and what came back.
func sdkRoundTrip[In, Out, Options any](call func(context.Context, *In, ...func(*Options)) (*Out, error)) func(context.Context) (any, any, error) {
	return func(ctx context.Context) (any, any, error) {
		in := filled[In]()
		out, err := call(ctx, in)
		return in, withoutMetadata(out), err
	}
}

func ptrTo[T any](v T) *T { return &v }
