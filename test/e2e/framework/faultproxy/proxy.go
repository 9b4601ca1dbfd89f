// Package faultproxy is a TCP proxy to put between a client (the karp
// controller) and a server (the kube-apiserver) to inject network faults:
// latency on everything the server sends, and drops that reset every live
// connection and refuse new ones for a while. It relays bytes and never
// terminates TLS, so the client still verifies the server's certificate
// (the API server's is valid for 127.0.0.1, where the proxy listens) and
// authenticates with its own.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy relays connections from its loopback address to a target.
type Proxy struct {
	target   string
	listener net.Listener

	mu        sync.Mutex
	latency   time.Duration
	dropUntil time.Time
	conns     map[*link]struct{}
	closed    bool
	accepted  int
	refused   int
	wg        sync.WaitGroup
}

// link is one proxied connection: the client's and the server's side.
type link struct {
	client, server net.Conn
	once           sync.Once
}

// reset closes both sides with an RST (no graceful FIN), as a network
// fault would.
func (l *link) reset() {
	l.once.Do(func() {
		for _, c := range []net.Conn{l.client, l.server} {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = c.Close()
		}
	})
}

// Start listens on a free 127.0.0.1 port and relays every connection to
// target (host:port).
func Start(target string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	p := &Proxy{target: target, listener: l, conns: map[*link]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// SetLatency holds everything the server sends for d before passing it on
// (0 turns it off): each request's response, and each watch event, arrives
// at least d late. It applies to live connections at once.
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
}

// Drop resets every live connection now and refuses (resets) new ones for
// d, as a network partition between client and server would.
func (p *Proxy) Drop(d time.Duration) {
	p.mu.Lock()
	p.dropUntil = time.Now().Add(d)
	live := make([]*link, 0, len(p.conns))
	for c := range p.conns {
		live = append(live, c)
	}
	p.mu.Unlock()
	for _, c := range live {
		c.reset()
	}
}

// Stats counts the connections accepted and relayed, and those refused
// during a drop.
func (p *Proxy) Stats() (accepted, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted, p.refused
}

// Close stops listening, resets every live connection and waits for the
// relays to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	live := make([]*link, 0, len(p.conns))
	for c := range p.conns {
		live = append(live, c)
	}
	p.mu.Unlock()
	err := p.listener.Close()
	for _, c := range live {
		c.reset()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.mu.Lock()
		dropping := time.Now().Before(p.dropUntil)
		if dropping {
			p.refused++
		}
		p.mu.Unlock()
		if dropping {
			(&link{client: conn, server: conn}).reset()
			continue
		}
		p.wg.Add(1)
		go p.relay(conn)
	}
}

// relay dials the target for one client connection and copies both ways
// until either side ends.
func (p *Proxy) relay(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	if err != nil {
		(&link{client: client, server: client}).reset()
		return
	}
	l := &link{client: client, server: server}
	p.mu.Lock()
	// A drop (or Close) that began while this connection was being dialled
	// missed it: reset it now.
	if p.closed || time.Now().Before(p.dropUntil) {
		p.mu.Unlock()
		l.reset()
		return
	}
	p.conns[l] = struct{}{}
	p.accepted++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, l)
		p.mu.Unlock()
		l.reset()
	}()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(server, client); done <- struct{}{} }()
	go func() { p.copyDelayed(client, server); done <- struct{}{} }()
	<-done
}

// chunk is data read from the server at a time.
type chunk struct {
	data []byte
	read time.Time
}

// copyDelayed copies src to dst, holding each chunk until the latency in
// force has passed since it was read. Chunks keep their order and are not
// delayed by each other's wait, so a stream's throughput is unchanged.
func (p *Proxy) copyDelayed(dst, src net.Conn) {
	queue := make(chan chunk, 1024)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32*1024)
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{data: buf[:n], read: time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		p.mu.Lock()
		latency := p.latency
		p.mu.Unlock()
		if wait := time.Until(c.read.Add(latency)); wait > 0 {
			time.Sleep(wait)
		}
		if _, err := dst.Write(c.data); err != nil {
			// The client side is gone: end the reader too.
			_ = src.Close()
			for range queue {
			}
			return
		}
	}
}
