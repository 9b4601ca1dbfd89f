package version_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	k8sversion "k8s.io/apimachinery/pkg/version"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/version"
	"github.com/karp-autoscaler/karp/pkg/test/awssim/fake"
)

func TestParse(t *testing.T) {
	for name, tc := range map[string]struct {
		info    k8sversion.Info
		want    string
		wantErr bool
	}{
		"plain":                 {info: k8sversion.Info{Major: "1", Minor: "31", GitVersion: "v1.31.2"}, want: "1.31"},
		"an EKS minor with a +": {info: k8sversion.Info{Major: "1", Minor: "30+", GitVersion: "v1.30.4-eks-a737599"}, want: "1.30"},
		"not a number":          {info: k8sversion.Info{Major: "1", Minor: "x", GitVersion: "v1.x"}, wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := version.Parse(&tc.info)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("Parse = %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// discovery is an API server's /version whose answer the test changes.
type discovery struct {
	info  k8sversion.Info
	err   error
	calls int
}

func (d *discovery) ServerVersion() (*k8sversion.Info, error) {
	d.calls++
	if d.err != nil {
		return nil, d.err
	}
	info := d.info
	return &info, nil
}

func TestGetCachesForFiveMinutes(t *testing.T) {
	d := &discovery{info: k8sversion.Info{Major: "1", Minor: "30"}}
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	p := version.NewProvider(d, clk)
	get := func() string {
		t.Helper()
		v, err := p.Get(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := get(); got != "1.30" {
		t.Fatalf("Get = %q, want 1.30", got)
	}
	d.info.Minor = "31"
	if got := get(); got != "1.30" || d.calls != 1 {
		t.Errorf("within five minutes: %q after %d calls, want the cached 1.30 after 1", got, d.calls)
	}
	clk.Step(5 * time.Minute)
	if got := get(); got != "1.31" {
		t.Errorf("after five minutes: %q, want the upgraded 1.31", got)
	}
	clk.Step(5 * time.Minute)
	d.err = errors.New("connection refused")
	if _, err := p.Get(t.Context()); err == nil {
		t.Error("Get succeeded while the API server was unreachable and the cache had expired")
	}
}

func TestSupported(t *testing.T) {
	for v, want := range map[string]bool{"1.25": false, "1.26": true, "1.31": true, "1.36": true, "1.37": false, "2.30": false, "1": false} {
		if got := version.Supported(v); got != want {
			t.Errorf("Supported(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestEKSControlPlane: with --eks-control-plane the version is EKS's
// cluster.version, not the API server's; without it, the API server's.
func TestEKSControlPlane(t *testing.T) {
	const cluster = "test-cluster"
	apiServer := k8sversion.Info{Major: "1", Minor: "36", GitVersion: "v1.36.3"}
	if fake.ClusterVersion == "1.36" {
		t.Fatal("the fake EKS cluster's version must differ from the API server's for this test to tell them apart")
	}
	for name, tc := range map[string]struct {
		eksControlPlane   bool
		want              string
		wantDiscoveryCall bool
	}{
		"from EKS":       {eksControlPlane: true, want: fake.ClusterVersion},
		"from discovery": {eksControlPlane: false, want: "1.36", wantDiscoveryCall: true},
	} {
		t.Run(name, func(t *testing.T) {
			eks := fake.NewEKS()
			eks.PutCluster(cluster, "https://example.invalid", "")
			d := &discovery{info: apiServer}
			p := version.NewProvider(d, clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
			if tc.eksControlPlane {
				p = p.FromEKS(eks, cluster)
			}
			got, err := p.Get(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Get = %q, want %q", got, tc.want)
			}
			if (d.calls > 0) != tc.wantDiscoveryCall || (eks.Calls("DescribeCluster") > 0) != tc.eksControlPlane {
				t.Errorf("asked discovery %d and EKS %d times, want only the %s", d.calls, eks.Calls("DescribeCluster"), name)
			}
		})
	}
}

func TestEKSControlPlaneUpgradeIsSeenAfterTheCache(t *testing.T) {
	eks := fake.NewEKS()
	eks.PutCluster("c", "https://example.invalid", "")
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	p := version.NewProvider(&discovery{err: errors.New("discovery must not be asked")}, clk).FromEKS(eks, "c")
	if got, err := p.Get(t.Context()); err != nil || got != fake.ClusterVersion {
		t.Fatalf("Get = %q, %v; want %q", got, err, fake.ClusterVersion)
	}
	eks.SetClusterVersion("c", "1.34")
	clk.Step(version.CacheTTL)
	if got, err := p.Get(t.Context()); err != nil || got != "1.34" {
		t.Errorf("after the upgrade and the cache TTL: Get = %q, %v; want 1.34", got, err)
	}
}

// A failing eks:DescribeCluster is an error that names the setting, so
// the operator knows what to grant or unset.
func TestEKSControlPlaneErrorsNameTheOption(t *testing.T) {
	for name, setup := range map[string]func(*fake.EKS){
		"access denied": func(e *fake.EKS) {
			e.PutCluster("c", "https://example.invalid", "")
			e.FailNext("DescribeCluster", 1, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized to perform eks:DescribeCluster"})
		},
		"no such cluster": func(*fake.EKS) {},
		"no version":      func(e *fake.EKS) { e.PutCluster("c", "", ""); e.SetClusterVersion("c", "") },
	} {
		t.Run(name, func(t *testing.T) {
			eks := fake.NewEKS()
			setup(eks)
			p := version.NewProvider(&discovery{info: k8sversion.Info{Major: "1", Minor: "36"}}, clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
			got, err := p.FromEKS(eks, "c").Get(t.Context())
			if err == nil {
				t.Fatalf("Get = %q, want an error", got)
			}
			for _, want := range []string{"--eks-control-plane", "eks:DescribeCluster", `"c"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
	// No EKS client at all: an error, not a silent fall back to the API
	// server.
	p := version.NewProvider(&discovery{info: k8sversion.Info{Major: "1", Minor: "36"}}, clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
	if got, err := p.FromEKS(nil, "c").Get(t.Context()); err == nil || !strings.Contains(err.Error(), "--eks-control-plane") {
		t.Errorf("FromEKS(nil).Get = %q, %v; want an error naming --eks-control-plane", got, err)
	}
}

func TestParseMajorMinor(t *testing.T) {
	for in, wantErr := range map[string]bool{"1.31": false, "1.36": false, "": true, "1": true, "1.x": true, "v1.31": true} {
		if _, err := version.ParseMajorMinor(in); (err != nil) != wantErr {
			t.Errorf("ParseMajorMinor(%q) error %v, want error %v", in, err, wantErr)
		}
	}
}
