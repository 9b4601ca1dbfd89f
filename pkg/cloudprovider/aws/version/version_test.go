package version_test

import (
	"errors"
	"testing"
	"time"

	k8sversion "k8s.io/apimachinery/pkg/version"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/cloudprovider/aws/version"
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
