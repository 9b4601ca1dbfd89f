package awssim

import (
	"go/token"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go/middleware"
	"github.com/google/go-cmp/cmp"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/sdkhttp"
)

// iamOperations are the IAM operations karp calls (or may call) whose wire
// shapes the round trip proves.
var iamOperations = []string{
	"AddRoleToInstanceProfile",
	"CreateInstanceProfile",
	"DeleteInstanceProfile",
	"GetInstanceProfile",
	"GetRole",
	"ListInstanceProfiles",
	"ListInstanceProfilesForRole",
	"RemoveRoleFromInstanceProfile",
	"TagInstanceProfile",
	"UntagInstanceProfile",
}

// TestEC2RoundTrip sends an input with every field set through the real
// ec2.Client to the handler, and returns an output with every field set:
// what the handler decodes must equal what the client sent, and what the
// client decodes must equal what the backend returned.
func TestEC2RoundTrip(t *testing.T) {
	client := func(url string) any {
		return ec2.New(ec2.Options{
			BaseEndpoint: aws.String(url),
			Region:       "us-west-2",
			Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
			Retryer:      noRetries(),
			HTTPClient:   sdkhttp.NewClient(),
		})
	}
	for _, op := range ec2Operations {
		t.Run(op, func(t *testing.T) {
			roundTrip(t, op, client, func(b *recordingBackend) http.Handler {
				h := newQueryHandler(ec2Protocol{}, nil)
				h.methods = b.method
				return h
			})
		})
	}
}

// TestIAMRoundTrip is TestEC2RoundTrip for the awsquery protocol of IAM.
func TestIAMRoundTrip(t *testing.T) {
	client := func(url string) any {
		return iam.New(iam.Options{
			BaseEndpoint: aws.String(url),
			Region:       "us-east-1",
			Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
			Retryer:      noRetries(),
			HTTPClient:   sdkhttp.NewClient(),
		})
	}
	for _, op := range iamOperations {
		t.Run(op, func(t *testing.T) {
			roundTrip(t, op, client, func(b *recordingBackend) http.Handler {
				h := newQueryHandler(iamProtocol{}, nil)
				h.methods = b.method
				return h
			})
		})
	}
}

// roundTrip calls op through the SDK client made by newClient against the
// handler made by newHandler, whose backend answers op with a filled output.
func roundTrip(t *testing.T, op string, newClient func(url string) any, newHandler func(*recordingBackend) http.Handler) {
	t.Helper()
	// The client's method gives the exact input and output types.
	probe := reflect.ValueOf(newClient("http://127.0.0.1:1")).MethodByName(op)
	if !probe.IsValid() {
		t.Fatalf("the SDK client has no method %s", op)
	}
	sig := probe.Type()
	sent := reflect.New(sig.In(1).Elem())
	fill(sent.Elem(), &filler{n: 1})
	returned := reflect.New(sig.Out(0).Elem())
	fill(returned.Elem(), &filler{n: 1000})

	backend := &recordingBackend{op: op, sig: sig, output: returned}
	srv := httptest.NewServer(newHandler(backend))
	defer srv.Close()

	results := reflect.ValueOf(newClient(srv.URL)).MethodByName(op).Call([]reflect.Value{reflect.ValueOf(t.Context()), sent})
	if err, _ := results[1].Interface().(error); err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	if diff := cmp.Diff(sent.Interface(), backend.received(), ignoreWireless); diff != "" {
		t.Errorf("%s input (-sent +decoded):\n%s", op, diff)
	}
	if diff := cmp.Diff(returned.Interface(), results[0].Interface(), ignoreWireless); diff != "" {
		t.Errorf("%s output (-returned +received):\n%s", op, diff)
	}
}

// ignoreWireless ignores what never travels: unexported fields and the
// SDK's result metadata.
var ignoreWireless = cmp.FilterPath(func(p cmp.Path) bool {
	sf, ok := p.Last().(cmp.StructField)
	if !ok {
		return false
	}
	return !token.IsExported(sf.Name()) || sf.Type() == reflect.TypeOf(middleware.Metadata{})
}, cmp.Ignore())

// recordingBackend answers one operation with a fixed output and records the
// input the handler decoded.
type recordingBackend struct {
	op     string
	sig    reflect.Type
	output reflect.Value

	mu    sync.Mutex
	input reflect.Value
}

// method is the handler's method lookup: a function with the SDK method's
// exact signature for op, nothing for any other name.
func (b *recordingBackend) method(name string) reflect.Value {
	if name != b.op {
		return reflect.Value{}
	}
	return reflect.MakeFunc(b.sig, func(args []reflect.Value) []reflect.Value {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.input = args[1]
		return []reflect.Value{b.output, reflect.Zero(b.sig.Out(1))}
	})
}

func (b *recordingBackend) received() any {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.input.IsValid() {
		return nil
	}
	return b.input.Interface()
}

// filler sets every field to a distinct value: lists of two, pointers set,
// enums to valid values, times at whole seconds.
type filler struct {
	n     int
	depth int
}

// maxFillDepth stops recursive types (a few SDK shapes contain themselves).
const maxFillDepth = 40

func fill(v reflect.Value, f *filler) {
	if f.depth > maxFillDepth {
		return
	}
	f.depth++
	defer func() { f.depth-- }()
	f.n++
	switch {
	case v.Type() == timeType:
		v.Set(reflect.ValueOf(time.Unix(int64(1_700_000_000+f.n), 0).UTC()))
		return
	case v.Type() == bytesType:
		v.SetBytes([]byte{byte(f.n), byte(f.n >> 8), 'x'})
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), f)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if sf := v.Type().Field(i); sf.IsExported() && sf.Type != reflect.TypeOf(middleware.Metadata{}) {
				fill(v.Field(i), f)
			}
		}
	case reflect.Slice:
		list := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(list.Index(i), f)
		}
		v.Set(list)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, f)
			fill(e, f)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.String:
		if values := v.MethodByName("Values"); values.IsValid() {
			// An enum: one of its values.
			all := values.Call(nil)[0]
			v.Set(all.Index(f.n % all.Len()))
			return
		}
		v.SetString("s-" + strconv.Itoa(f.n))
	case reflect.Bool:
		v.SetBool(f.n%2 == 0)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
		v.SetInt(int64(f.n % 100))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(f.n) + 0.5)
	}
}

// TestEmptyLists: an empty list is sent as "Key=" by awsquery and not at all
// by the EC2 query protocol; either way the call is accepted.
func TestEmptyLists(t *testing.T) {
	iamSig := reflect.ValueOf(&iam.Client{}).MethodByName("CreateInstanceProfile").Type()
	out := reflect.ValueOf(&iam.CreateInstanceProfileOutput{InstanceProfile: &iamtypes.InstanceProfile{InstanceProfileName: aws.String("p")}})
	backend := &recordingBackend{op: "CreateInstanceProfile", sig: iamSig, output: out}
	h := newQueryHandler(iamProtocol{}, nil)
	h.methods = backend.method
	client := iamClient(serve(t, h), noRetries())
	if _, err := client.CreateInstanceProfile(t.Context(), &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p"), Tags: []iamtypes.Tag{}}); err != nil {
		t.Fatal(err)
	}
	in := backend.received().(*iam.CreateInstanceProfileInput)
	if len(in.Tags) != 0 || aws.ToString(in.InstanceProfileName) != "p" {
		t.Errorf("decoded %+v, want profile p with no tags", in)
	}

	ec2Sig := reflect.ValueOf(&ec2.Client{}).MethodByName("DescribeInstances").Type()
	ec2Backend := &recordingBackend{op: "DescribeInstances", sig: ec2Sig, output: reflect.ValueOf(&ec2.DescribeInstancesOutput{})}
	eh := newQueryHandler(ec2Protocol{}, nil)
	eh.methods = ec2Backend.method
	if _, err := ec2Client(serve(t, eh), noRetries()).DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{InstanceIds: []string{}, Filters: []ec2types.Filter{}}); err != nil {
		t.Fatal(err)
	}
	if got := ec2Backend.received().(*ec2.DescribeInstancesInput); len(got.InstanceIds) != 0 || len(got.Filters) != 0 {
		t.Errorf("decoded %+v, want no instance IDs and no filters", got)
	}
}
