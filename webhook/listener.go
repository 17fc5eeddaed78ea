package webhook

import (
	"container/list"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// connLimits bound the connections of one listener.
type connLimits struct {
	// open and openPerClient bound the connections being served (their TLS handshake done);
	// a connection beyond them is closed.
	open, openPerClient int
	// pending and pendingPerClient bound the connections still in their TLS handshake. A client
	// over its own share is refused; when all are taken, the oldest pending connection is
	// closed to make room: an honest client completes its handshake in milliseconds, so
	// connections that send nothing cannot keep it out, from however many addresses.
	pending, pendingPerClient int
	// handshake bounds a TLS handshake.
	handshake time.Duration
}

// boundedListener accepts connections within connLimits. With a TLS configuration it completes
// every handshake itself, in a goroutine of its own, before it hands the connection (a
// *tls.Conn, so that net/http sees the negotiated protocol and the client certificate) to the
// server; without one it hands plain connections over within the open limits. The server must
// report its connections' ends through connState.
type boundedListener struct {
	ln     net.Listener
	tls    *tls.Config
	limits connLimits

	ready chan net.Conn
	done  chan struct{}
	err   error // why accepting ended; set before done is closed

	mu            sync.Mutex
	pending       *list.List // of *pendingConn, oldest first
	pendingClient map[string]int
	open          map[net.Conn]string // served connection -> client
	openClient    map[string]int
}

type pendingConn struct {
	raw     net.Conn
	client  string
	evicted bool // closed to make room (guarded by mu)
}

func newBoundedListener(ln net.Listener, cfg *tls.Config, limits connLimits) *boundedListener {
	l := &boundedListener{
		ln: ln, tls: cfg, limits: limits,
		ready: make(chan net.Conn), done: make(chan struct{}),
		pending: list.New(), pendingClient: map[string]int{},
		open: map[net.Conn]string{}, openClient: map[string]int{},
	}
	go l.acceptLoop()
	return l
}

func (l *boundedListener) acceptLoop() {
	for {
		raw, err := l.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			l.err = err
			close(l.done)
			return
		}
		client := clientOf(raw.RemoteAddr())
		if l.tls == nil {
			l.deliver(raw, client)
			continue
		}
		if el, ok := l.admitPending(raw, client); ok {
			go l.handshake(el)
		}
	}
}

// admitPending adds raw to the pending connections, closing the oldest one when all are taken;
// a client over its own share is refused.
func (l *boundedListener) admitPending(raw net.Conn, client string) (*list.Element, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pendingClient[client] >= l.limits.pendingPerClient {
		refusedConnections.Inc()
		_ = raw.Close()
		return nil, false
	}
	if l.pending.Len() >= l.limits.pending {
		oldest := l.pending.Front()
		p := l.pending.Remove(oldest).(*pendingConn)
		p.evicted = true
		if l.pendingClient[p.client]--; l.pendingClient[p.client] <= 0 {
			delete(l.pendingClient, p.client)
		}
		refusedConnections.Inc()
		_ = p.raw.Close() // its handshake fails and ends
	}
	l.pendingClient[client]++
	return l.pending.PushBack(&pendingConn{raw: raw, client: client}), true
}

// handshake completes the TLS handshake of a pending connection within the limit and delivers
// it to the server.
func (l *boundedListener) handshake(el *list.Element) {
	p := el.Value.(*pendingConn)
	tc := tls.Server(p.raw, l.tls)
	ctx, cancel := context.WithTimeout(context.Background(), l.limits.handshake)
	_ = p.raw.SetDeadline(time.Now().Add(l.limits.handshake))
	err := tc.HandshakeContext(ctx)
	cancel()
	l.mu.Lock()
	if !p.evicted {
		l.pending.Remove(el)
		if l.pendingClient[p.client]--; l.pendingClient[p.client] <= 0 {
			delete(l.pendingClient, p.client)
		}
	}
	l.mu.Unlock()
	if err != nil {
		_ = tc.Close()
		return
	}
	_ = p.raw.SetDeadline(time.Time{}) // the server sets its own
	l.deliver(tc, p.client)
}

// deliver hands c to the server if the open limits allow it.
func (l *boundedListener) deliver(c net.Conn, client string) {
	l.mu.Lock()
	if len(l.open) >= l.limits.open || l.openClient[client] >= l.limits.openPerClient {
		l.mu.Unlock()
		refusedConnections.Inc()
		_ = c.Close()
		return
	}
	l.open[c] = client
	l.openClient[client]++
	openConnections.Inc()
	l.mu.Unlock()
	select {
	case l.ready <- c:
	case <-l.done:
		l.forget(c)
		_ = c.Close()
	}
}

// Accept returns the next connection within the limits.
func (l *boundedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

// Close stops accepting; pending handshakes end on their own deadline.
func (l *boundedListener) Close() error { return l.ln.Close() }

// Addr is the listening address.
func (l *boundedListener) Addr() net.Addr { return l.ln.Addr() }

// connState is the server's http.Server.ConnState: a connection that ends (or is hijacked)
// leaves the limits.
func (l *boundedListener) connState(c net.Conn, st http.ConnState) {
	if st == http.StateClosed || st == http.StateHijacked {
		l.forget(c)
	}
}

func (l *boundedListener) forget(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	client, ok := l.open[c]
	if !ok {
		return
	}
	delete(l.open, c)
	if l.openClient[client]--; l.openClient[client] <= 0 {
		delete(l.openClient, client)
	}
	openConnections.Dec()
}

// clientOf is the client a connection or request counts against: its IP address.
func clientOf(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return tcp.IP.String()
	}
	return hostOf(addr.String())
}

// hostOf is the host of a host:port address (the address itself when it has no port).
func hostOf(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return hostport
}
