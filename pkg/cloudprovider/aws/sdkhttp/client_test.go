package sdkhttp

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// TestBodiesLoseWriteTo: the client below sees the same bytes and the same
// Close, but no WriteTo for net/http to call after the SDK closed the body.
func TestBodiesLoseWriteTo(t *testing.T) {
	body := &closeRecorder{Reader: bytes.NewReader([]byte("Action=DescribeInstances"))}
	if _, ok := any(body).(io.WriterTo); !ok {
		t.Fatal("the test body should offer WriteTo")
	}
	var got *http.Request
	next := doFunc(func(req *http.Request) (*http.Response, error) {
		got = req
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
	req.Body = body
	if _, err := Wrap(next).Do(req); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Body.(io.WriterTo); ok {
		t.Error("the body sent still offers WriteTo")
	}
	if b, _ := io.ReadAll(got.Body); string(b) != "Action=DescribeInstances" {
		t.Errorf("the body sent reads %q", b)
	}
	if err := got.Body.Close(); err != nil || !body.closed {
		t.Errorf("closing the body sent: err %v, closed %v", err, body.closed)
	}

	// A request without a body is passed on untouched.
	req = httptest.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	req.Body = http.NoBody
	if _, err := Wrap(next).Do(req); err != nil {
		t.Fatal(err)
	}
	if got.Body != http.NoBody {
		t.Errorf("got body %T for a request without one", got.Body)
	}
}

// TestLargeResponsesOnLoopback: large answers from a loopback server, which
// the SDK's own client loses to a dropped connection about once in five,
// all arrive without a retry.
func TestLargeResponsesOnLoopback(t *testing.T) {
	token := strings.Repeat("x", 200_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "text/xml")
		_, _ = io.WriteString(w, "<DescribeInstanceTypesResponse><nextToken>"+token+"</nextToken></DescribeInstanceTypesResponse>")
	}))
	defer srv.Close()
	client := ec2.New(ec2.Options{
		BaseEndpoint: aws.String(srv.URL),
		Region:       "us-west-2",
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
		Retryer:      aws.NopRetryer{},
		HTTPClient:   NewClient(),
	})
	for i := range 60 {
		out, err := client.DescribeInstanceTypes(t.Context(), &ec2.DescribeInstanceTypesInput{})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if len(aws.ToString(out.NextToken)) != len(token) {
			t.Fatalf("call %d: got a %d-byte token, want %d", i, len(aws.ToString(out.NextToken)), len(token))
		}
	}
}

type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(req *http.Request) (*http.Response, error) { return f(req) }

// closeRecorder is a body with WriteTo (from bytes.Reader) that records Close.
type closeRecorder struct {
	*bytes.Reader
	closed bool
}

func (c *closeRecorder) Close() error {
	c.closed = true
	return nil
}
