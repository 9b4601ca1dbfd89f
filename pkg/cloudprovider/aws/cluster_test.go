package aws

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/smithy-go"
	"k8s.io/client-go/rest"

	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

const eksEndpoint = "https://0123456789ABCDEF.gr7.us-west-2.eks.amazonaws.com"

func eksWithCluster() *fake.EKS {
	e := fake.NewEKS()
	e.PutCluster("test-cluster", eksEndpoint, base64.StdEncoding.EncodeToString([]byte("eks-ca")))
	return e
}

func TestClusterEndpointFlagWinsOverEKS(t *testing.T) {
	e := eksWithCluster()
	got, err := clusterEndpoint(t.Context(), "https://api.example.com", "test-cluster", e)
	if err != nil {
		t.Fatal(err)
	}
	if got != "https://api.example.com" {
		t.Errorf("endpoint %q, want the flag's", got)
	}
	if n := e.Calls("DescribeCluster"); n != 0 {
		t.Errorf("%d DescribeCluster calls with --cluster-endpoint set, want 0", n)
	}
}

func TestClusterEndpointFromEKS(t *testing.T) {
	e := eksWithCluster()
	got, err := clusterEndpoint(t.Context(), "", "test-cluster", e)
	if err != nil {
		t.Fatal(err)
	}
	if got != eksEndpoint {
		t.Errorf("endpoint %q, want the one EKS reports (%s)", got, eksEndpoint)
	}
	if n := e.Calls("DescribeCluster"); n != 1 {
		t.Errorf("%d DescribeCluster calls, want 1", n)
	}
}

func TestClusterEndpointEKSFailureNamesTheFlag(t *testing.T) {
	denied := fake.APIError("AccessDeniedException", "User is not authorized to perform: eks:DescribeCluster")
	for _, c := range []struct {
		name    string
		cluster string
		fail    error
		code    string
	}{
		{name: "access denied", cluster: "test-cluster", fail: denied, code: "AccessDeniedException"},
		{name: "no such cluster", cluster: "other-cluster", code: "ResourceNotFoundException"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := eksWithCluster()
			if c.fail != nil {
				e.FailNext("DescribeCluster", 1, c.fail)
			}
			got, err := clusterEndpoint(t.Context(), "", c.cluster, e)
			if err == nil {
				t.Fatalf("no error; endpoint %q", got)
			}
			for _, want := range []string{"--cluster-endpoint", "eks:DescribeCluster", c.cluster} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != c.code {
				t.Errorf("error %v does not wrap EKS's %s", err, c.code)
			}
		})
	}
}

func TestClusterEndpointEKSReportsNone(t *testing.T) {
	e := fake.NewEKS()
	e.PutCluster("test-cluster", "", "")
	_, err := clusterEndpoint(t.Context(), "", "test-cluster", e)
	if err == nil || !strings.Contains(err.Error(), "--cluster-endpoint") {
		t.Fatalf("error %v, want one naming --cluster-endpoint", err)
	}
}

func TestClusterEndpointWithoutEKSClient(t *testing.T) {
	if _, err := clusterEndpoint(t.Context(), "", "test-cluster", nil); err == nil || !strings.Contains(err.Error(), "--cluster-endpoint") {
		t.Fatalf("error %v, want one naming --cluster-endpoint", err)
	}
	got, err := clusterEndpoint(t.Context(), "https://api.example.com", "test-cluster", nil)
	if err != nil || got != "https://api.example.com" {
		t.Fatalf("endpoint %q, error %v with --cluster-endpoint set and no EKS client", got, err)
	}
}

func TestClusterCABundle(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(file, []byte("file-ca"), 0o600); err != nil {
		t.Fatal(err)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct {
		name string
		flag string
		cfg  *rest.Config
		want string
	}{
		{name: "the flag wins", flag: b64("flag-ca"), cfg: &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte("rest-ca")}}, want: b64("flag-ca")},
		{name: "the rest config's CA data", cfg: &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: []byte("rest-ca")}}, want: b64("rest-ca")},
		{name: "the rest config's CA file", cfg: &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: file}}, want: b64("file-ca")},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := clusterCABundle(c.flag, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("CA bundle %q, want %q", got, c.want)
			}
		})
	}
	if _, err := clusterCABundle("", &rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(t.TempDir(), "missing")}}); err == nil ||
		!strings.Contains(err.Error(), "--cluster-ca-bundle") {
		t.Errorf("error %v for an unreadable CA file, want one naming --cluster-ca-bundle", err)
	}
}
