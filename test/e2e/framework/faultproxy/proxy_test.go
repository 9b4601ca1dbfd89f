package faultproxy_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/karp-autoscaler/karp/test/e2e/framework/faultproxy"
)

// start runs an HTTP server answering "ok" and a proxy in front of it.
func start(t *testing.T) (*faultproxy.Proxy, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	t.Cleanup(srv.Close)
	p, err := faultproxy.Start(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	// Keep-alive on: a drop must break the connection the client reuses.
	return p, &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
}

func get(ctx context.Context, hc *http.Client, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if string(body) != "ok" {
		return fmt.Errorf("body %q, want ok", body)
	}
	return nil
}

func TestProxyRelays(t *testing.T) {
	p, hc := start(t)
	if host, _, _ := net.SplitHostPort(p.Addr()); host != "127.0.0.1" {
		t.Errorf("proxy listens on %s, want 127.0.0.1 (the API server's certificate covers it)", p.Addr())
	}
	for range 3 {
		if err := get(t.Context(), hc, p.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	if accepted, refused := p.Stats(); accepted != 1 || refused != 0 {
		t.Errorf("stats = %d accepted, %d refused; want 1 reused connection, 0 refused", accepted, refused)
	}
}

// A drop breaks the live connection and refuses new ones while it lasts;
// once it ends, requests succeed again.
func TestProxyDrop(t *testing.T) {
	p, hc := start(t)
	if err := get(t.Context(), hc, p.Addr()); err != nil {
		t.Fatal(err)
	}
	p.Drop(time.Hour)
	if err := get(t.Context(), hc, p.Addr()); err == nil {
		t.Fatal("a request through a dropped proxy succeeded")
	}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	if err := get(t.Context(), fresh, p.Addr()); err == nil {
		t.Fatal("a new connection through a dropped proxy succeeded")
	}
	if _, refused := p.Stats(); refused == 0 {
		t.Error("no connection counted as refused during the drop")
	}
	p.Drop(0)
	if err := get(t.Context(), hc, p.Addr()); err != nil {
		t.Fatalf("after the drop ended: %v", err)
	}
}

// Drop(d) ends by itself after d.
func TestProxyDropExpires(t *testing.T) {
	p, hc := start(t)
	p.Drop(300 * time.Millisecond)
	deadline := time.Now().Add(time.Minute)
	for {
		err := get(t.Context(), hc, p.Addr())
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("requests still fail a minute after a 300ms drop: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Latency holds every response at least that long, on a new and on a
// reused connection. Only the lower bound is asserted: load can make a
// request slower, never faster than the injected latency.
func TestProxyLatency(t *testing.T) {
	p, hc := start(t)
	const latency = 700 * time.Millisecond
	p.SetLatency(latency)
	for range 2 {
		began := time.Now()
		if err := get(t.Context(), hc, p.Addr()); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took < latency {
			t.Errorf("request took %v with %v latency injected", took, latency)
		}
	}
}

func TestProxyCloseResetsConnections(t *testing.T) {
	p, hc := start(t)
	if err := get(t.Context(), hc, p.Addr()); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := get(t.Context(), hc, p.Addr()); err == nil {
		t.Fatal("a request through a closed proxy succeeded")
	}
}
