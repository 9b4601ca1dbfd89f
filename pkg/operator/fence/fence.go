// Package fence keeps a karp replica that may have lost its leader-election
// Lease from writing to the API server.
//
// controller-runtime's elector notices a lost Lease only when a renewal
// fails for the whole renew deadline. A replica frozen past its Lease (a
// SIGSTOP, a long GC or VM pause, a partition) resumes believing it leads
// and acts for up to that long while another replica leads: in one e2e run
// a resumed old leader created NodeClaims and Nodes and deleted others'
// within ten seconds of resuming. The fence closes that window at the
// client: it watches the elector's own Lease writes go through the same
// transport, and refuses every other write once the last successful
// renewal is older than the renew deadline. A renewal at T vouches for the
// Lease until T+LeaseDuration in the eyes of the other replicas, so with a
// renew deadline shorter than the lease duration no write of a replica
// without the Lease is sent while another replica may lead (a request
// already in flight excepted).
//
// Reads are never refused; neither are the Lease requests themselves nor
// authentication and authorization reviews (which change nothing). Before
// the first renewal every write is refused: a standby writes nothing, and
// neither does a leader once it has released the Lease (a PUT with no
// holder, on shutdown).
//
// The package imports no controller-runtime or client-go; it wraps an
// http.RoundTripper (rest.Config.Wrap) and takes its clock as a dependency.
package fence

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/utils/clock"
)

// ErrLeaseLapsed is wrapped by the error a refused write returns.
var ErrLeaseLapsed = errors.New("leader-election lease not renewed recently: this replica may no longer lead")

// Fence tracks the renewals of one Lease and gates writes on them.
type Fence struct {
	clock clock.PassiveClock
	// vouch is how long a successful renewal lets writes through: the
	// elector's renew deadline.
	vouch time.Duration
	// leases is the Lease collection's path, lease the Lease's.
	leases, lease string

	mu      sync.Mutex
	renewed time.Time // when the last successful renewal was sent; zero: never
}

// New returns a fence for the Lease namespace/name, letting writes through
// for vouch after each successful renewal (the elector's renew deadline,
// which must be shorter than the lease duration).
func New(clk clock.PassiveClock, vouch time.Duration, namespace, name string) *Fence {
	leases := "/apis/coordination.k8s.io/v1/namespaces/" + namespace + "/leases"
	return &Fence{clock: clk, vouch: vouch, leases: leases, lease: leases + "/" + name}
}

// Holds reports whether the last successful renewal was sent less than the
// vouch duration ago.
func (f *Fence) Holds() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.renewed.IsZero() && f.clock.Since(f.renewed) < f.vouch
}

// Check returns nil while the fence holds, else an error wrapping
// ErrLeaseLapsed: for writes that do not go through the wrapped transport
// (a cloud provider's launches and terminations).
func (f *Fence) Check(what string) error {
	if f.Holds() {
		return nil
	}
	return fmt.Errorf("refusing %s (lease %s, writes need a renewal within %s): %w", what, f.since(), f.vouch, ErrLeaseLapsed)
}

// Wrap returns next behind the fence; it fits rest.Config.Wrap.
func (f *Fence) Wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper{fence: f, next: next}
}

// leaseWrite reports whether req creates (POST to the collection: only
// the elector creates Leases there) or renews (PUT) the fenced Lease.
func (f *Fence) leaseWrite(req *http.Request) bool {
	switch req.Method {
	case http.MethodPost:
		return req.URL.Path == f.leases
	case http.MethodPut:
		return req.URL.Path == f.lease
	}
	return false
}

// renewal records a successful Lease write sent at sent.
func (f *Fence) renewal(sent time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if sent.After(f.renewed) {
		f.renewed = sent
	}
}

// released records that the Lease was given up: no write goes through
// until the next renewal.
func (f *Fence) released() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renewed = time.Time{}
}

// releases reports whether a Lease write gives the Lease up (no holder).
// It decodes the body (protobuf, as client-go sends it, or JSON) and puts
// it back; a body it cannot decode counts as a renewal, as the elector
// writes no other kind.
func releases(req *http.Request) (bool, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return false, nil
	}
	raw, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return false, fmt.Errorf("reading the Lease write: %w", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(raw))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil }
	lease := &coordinationv1.Lease{}
	if _, _, err := leaseDecoder.Decode(raw, nil, lease); err != nil {
		return false, nil //nolint:nilerr // not a Lease this fence can read: a renewal, as documented
	}
	return lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "", nil
}

// leaseDecoder reads a coordination/v1 Lease in any wire format the API
// server accepts.
var leaseDecoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	utilruntime.Must(coordinationv1.AddToScheme(scheme))
	return serializer.NewCodecFactory(scheme).UniversalDeserializer()
}()

// since describes the last renewal for an error message.
func (f *Fence) since() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.renewed.IsZero() {
		return "never renewed"
	}
	return "last renewed " + f.clock.Since(f.renewed).Round(time.Millisecond).String() + " ago"
}

type roundTripper struct {
	fence *Fence
	next  http.RoundTripper
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	f := rt.fence
	if f.leaseWrite(req) {
		release, err := releases(req)
		if err != nil {
			return nil, err
		}
		sent := f.clock.Now()
		resp, err := rt.next.RoundTrip(req)
		if err == nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
			if release {
				f.released()
			} else {
				f.renewal(sent)
			}
		}
		return resp, err
	}
	if write(req) && !exempt(req.URL.Path) {
		if err := f.Check(req.Method + " " + req.URL.Path); err != nil {
			return nil, err
		}
	}
	return rt.next.RoundTrip(req)
}

func write(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// exempt paths are reviews: POSTs that ask a question and change nothing.
func exempt(path string) bool {
	return strings.HasPrefix(path, "/apis/authentication.k8s.io/") || strings.HasPrefix(path, "/apis/authorization.k8s.io/")
}
