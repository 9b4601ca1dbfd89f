package awssim_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws"
	"github.com/karp-autoscaler/karp/pkg/test/awssim"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// TestServesEveryCallKarpMakes: every EC2 and IAM method karp's provider is
// wired with is an action the simulator serves from the fakes, so adding a
// call without its wire names (hack/awsquerynames) fails here rather than
// in an end-to-end run.
func TestServesEveryCallKarpMakes(t *testing.T) {
	tests := map[string]struct {
		api     reflect.Type
		handler http.Handler
	}{
		"ec2": {api: reflect.TypeFor[aws.EC2API](), handler: awssim.NewEC2Handler(fake.NewEC2())},
		"iam": {api: reflect.TypeFor[aws.IAMAPI](), handler: awssim.NewIAMHandler(fake.NewIAM())},
	}
	for name, tc := range tests {
		if tc.api.NumMethod() == 0 {
			t.Fatalf("%s: the interface has no methods", name)
		}
		for i := range tc.api.NumMethod() {
			action := tc.api.Method(i).Name
			t.Run(name+"/"+action, func(t *testing.T) {
				req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(url.Values{"Action": {action}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				rec := httptest.NewRecorder()
				tc.handler.ServeHTTP(rec, req)
				if body := rec.Body.String(); strings.Contains(body, "<Code>InvalidAction</Code>") {
					t.Errorf("%s is not served: %s", action, body)
				}
			})
		}
	}
}
