package awssim

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Listen serves h on a fresh loopback port and returns its base URL
// (http://127.0.0.1:PORT, for AWS_ENDPOINT_URL or a client's BaseEndpoint)
// and a stop func that closes the listener and every open connection, which
// also releases calls held by (*Router).HoldAfter.
func Listen(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listening on loopback: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Serve returns http.ErrServerClosed once stop closes the server;
		// there is nothing to report either way.
		_ = srv.Serve(ln)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = srv.Close()
			<-done
		})
	}
	return "http://" + ln.Addr().String(), stop, nil
}
