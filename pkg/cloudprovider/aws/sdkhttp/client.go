package sdkhttp

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// NewClient returns the SDK's default HTTP client, sending request bodies
// without their WriteTo method (see the package doc).
func NewClient() aws.HTTPClient {
	return Wrap(awshttp.NewBuildableClient())
}

// Wrap makes next send request bodies without their WriteTo method.
func Wrap(next aws.HTTPClient) aws.HTTPClient {
	return client{next: next}
}

type client struct{ next aws.HTTPClient }

// Do sends req with its body hidden behind a plain io.ReadCloser.
func (c client) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = readCloser{req.Body}
	}
	return c.next.Do(req)
}

// readCloser exposes only Read and Close of the body it holds.
type readCloser struct{ io.ReadCloser }
