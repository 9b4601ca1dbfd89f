package instanceprofile_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/instanceprofile"
	"github.com/karp-autoscaler/karp/pkg/test/awssim"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

// Through the SDK's own serialization and retries against the simulated
// IAM: the profile is created with its path and tags and the role
// attached, a throttled call is retried by the SDK, and Delete removes it.
func TestOverTheWire(t *testing.T) {
	backend := fake.NewIAM()
	backend.AddRole("node")
	router := awssim.NewRouter(map[string]http.Handler{"iam": awssim.NewIAMHandler(backend)})
	url, stop, err := awssim.Listen(router)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	client := iam.NewFromConfig(aws.Config{
		Region: "us-west-2",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDSIMULATED", SecretAccessKey: "secret"}, nil
		}),
	}, func(o *iam.Options) { o.BaseEndpoint = aws.String(url) })
	p := instanceprofile.NewProvider(client, clocktesting.NewFakeClock(time.Now()), "prod", "us-west-2")
	nc := nodeClass("default", "1", "node")
	nc.Spec.Tags = map[string]string{"team": "ml"}
	router.Throttle("iam", "CreateInstanceProfile", 1)

	name, err := p.Ensure(t.Context(), nc)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}

	profile, ok := backend.InstanceProfile(name)
	if !ok {
		t.Fatalf("no profile %s in IAM", name)
	}
	if got := aws.ToString(profile.Path); got != "/karpenter/us-west-2/prod/uid-1/" {
		t.Errorf("path %q", got)
	}
	if len(profile.Roles) != 1 || aws.ToString(profile.Roles[0].RoleName) != "node" {
		t.Errorf("roles %+v, want node", profile.Roles)
	}
	if diff := cmp.Diff(p.Tags(nc), backend.ProfileTags(name)); diff != "" {
		t.Errorf("tags (-want,+got)\n%s", diff)
	}
	if n := router.Calls("iam", "CreateInstanceProfile"); n != 2 {
		t.Errorf("%d CreateInstanceProfile requests, want the throttled one and the SDK's retry", n)
	}

	if err := p.Delete(t.Context(), nc); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if names := backend.InstanceProfileNames(); len(names) != 0 {
		t.Errorf("profiles %v left", names)
	}
}
