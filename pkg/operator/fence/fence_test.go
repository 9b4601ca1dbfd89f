package fence_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/karp-autoscaler/karp/pkg/operator/fence"
)

const (
	lease  = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/karp"
	leases = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
	vouch  = 10 * time.Second
)

// server records the requests that reached it and answers leaseStatus to
// Lease writes, 200 to everything else.
type server struct {
	mu          sync.Mutex
	got         []string
	leaseStatus int
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	body, _ := io.ReadAll(r.Body)
	entry := r.Method + " " + r.URL.Path
	if len(body) > 0 {
		entry += " " + string(body)
	}
	s.got = append(s.got, entry)
	status := http.StatusOK
	if strings.HasPrefix(r.URL.Path, leases) && r.Method != http.MethodGet && s.leaseStatus != 0 {
		status = s.leaseStatus
	}
	s.mu.Unlock()
	w.WriteHeader(status)
}

func (s *server) reached() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

type step struct {
	advance time.Duration // clock step before the request
	method  string
	path    string
	// sent: the request reaches the server; otherwise it is refused
	// with ErrLeaseLapsed.
	sent bool
	// leaseStatus the server answers Lease writes with (0: 200).
	leaseStatus int
	// body of the request (JSON), if any.
	body string
}

func TestFence(t *testing.T) {
	nodeClaims := "/apis/karpenter.sh/v1/nodeclaims"
	node := "/api/v1/nodes/n1"
	for name, steps := range map[string][]step{
		"a standby writes nothing, reads and asks for the lease": {
			{method: http.MethodGet, path: node, sent: true},
			{method: http.MethodPost, path: nodeClaims},
			{method: http.MethodPatch, path: node},
			{method: http.MethodDelete, path: node},
			{method: http.MethodGet, path: lease, sent: true},
			{method: http.MethodPost, path: "/apis/authorization.k8s.io/v1/subjectaccessreviews", sent: true},
		},
		"creating the lease lets writes through": {
			{method: http.MethodPost, path: leases, sent: true},
			{method: http.MethodPost, path: nodeClaims, sent: true},
		},
		"a renewal vouches for the renew deadline, then writes stop": {
			{method: http.MethodPut, path: lease, sent: true},
			{advance: vouch - time.Millisecond, method: http.MethodPatch, path: node, sent: true},
			{advance: time.Millisecond, method: http.MethodPatch, path: node},
			{method: http.MethodGet, path: node, sent: true},
			{method: http.MethodPut, path: lease, sent: true},
			{method: http.MethodDelete, path: node, sent: true},
		},
		"a frozen leader resuming past its lease writes nothing": {
			{method: http.MethodPut, path: lease, sent: true},
			{method: http.MethodPost, path: nodeClaims, sent: true},
			{advance: 30 * time.Second, method: http.MethodPost, path: nodeClaims},
			{method: http.MethodDelete, path: node},
		},
		"a failed renewal vouches for nothing": {
			{method: http.MethodPut, path: lease, sent: true, leaseStatus: http.StatusConflict},
			{method: http.MethodPatch, path: node},
		},
		"another lease's writes are ordinary writes": {
			{method: http.MethodPut, path: leases + "/someone-else"},
			{method: http.MethodPut, path: "/apis/coordination.k8s.io/v1/namespaces/other/leases/karp"},
			{method: http.MethodPatch, path: node},
		},
		"a renewal naming a holder vouches; a release stops writes at once": {
			{method: http.MethodPut, path: lease, sent: true, body: `{"spec":{"holderIdentity":"me","leaseDurationSeconds":15}}`},
			{method: http.MethodPatch, path: node, sent: true},
			{method: http.MethodPut, path: lease, sent: true, body: `{"spec":{"holderIdentity":"","leaseDurationSeconds":1}}`},
			{method: http.MethodPatch, path: node},
			{method: http.MethodPut, path: lease, sent: true, body: `{"spec":{"holderIdentity":"me"}}`},
			{method: http.MethodPatch, path: node, sent: true},
		},
		"a release in protobuf, as client-go sends it, stops writes too": {
			{method: http.MethodPut, path: lease, sent: true, body: protoLease(t, "me")},
			{method: http.MethodPatch, path: node, sent: true},
			{method: http.MethodPut, path: lease, sent: true, body: protoLease(t, "")},
			{method: http.MethodPatch, path: node},
		},
		"a failed release changes nothing": {
			{method: http.MethodPut, path: lease, sent: true},
			{method: http.MethodPut, path: lease, sent: true, leaseStatus: http.StatusConflict, body: `{"spec":{"holderIdentity":""}}`},
			{method: http.MethodPatch, path: node, sent: true},
		},
		"reads of the lease do not renew it": {
			{method: http.MethodPut, path: lease, sent: true},
			{advance: vouch, method: http.MethodGet, path: lease, sent: true},
			{method: http.MethodPatch, path: node},
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := &server{}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			f := fence.New(clk, vouch, "kube-system", "karp")
			hc := &http.Client{Transport: f.Wrap(http.DefaultTransport)}
			var want []string
			for i, s := range steps {
				clk.Step(s.advance)
				srv.mu.Lock()
				srv.leaseStatus = s.leaseStatus
				srv.mu.Unlock()
				var body io.Reader
				if s.body != "" {
					body = strings.NewReader(s.body)
				}
				req, err := http.NewRequestWithContext(t.Context(), s.method, ts.URL+s.path, body)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := hc.Do(req)
				if s.sent {
					entry := s.method + " " + s.path
					if s.body != "" {
						entry += " " + s.body
					}
					want = append(want, entry)
					if err != nil {
						t.Fatalf("step %d %s %s: %v, want it sent", i, s.method, s.path, err)
					}
					_ = resp.Body.Close()
					continue
				}
				if err == nil {
					_ = resp.Body.Close()
				}
				if !errors.Is(err, fence.ErrLeaseLapsed) {
					t.Fatalf("step %d %s %s: err %v, want ErrLeaseLapsed", i, s.method, s.path, err)
				}
			}
			if got := srv.reached(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("requests that reached the server:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestRefusalNamesTheLapse(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f := fence.New(clk, vouch, "kube-system", "karp")
	ts := httptest.NewServer(&server{})
	defer ts.Close()
	hc := &http.Client{Transport: f.Wrap(http.DefaultTransport)}
	resp, err := hc.Post(ts.URL+lease[:len(leases)], "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if !f.Holds() {
		t.Fatal("the fence does not hold right after creating the lease")
	}
	clk.Step(25 * time.Second)
	_, err = hc.Post(ts.URL+"/api/v1/namespaces/default/events", "application/json", nil)
	if err == nil || !strings.Contains(err.Error(), "last renewed 25s ago") || !strings.Contains(err.Error(), "/api/v1/namespaces/default/events") {
		t.Fatalf("refusal = %v, want it to name the path and the 25s since the last renewal", err)
	}
	if f.Holds() {
		t.Error("the fence holds 25s after the last renewal")
	}
}

// protoLease encodes a Lease held by holder ("" for a release) as client-go
// sends it: protobuf.
func protoLease(t *testing.T, holder string) string {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{
		TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "karp"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme, scheme).Encode(lease, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
