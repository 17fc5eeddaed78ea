package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// tlsServer is the webhook's HTTPS server. It keeps controller-runtime's webhook server for
// what it does well — the path multiplexer and the per-path request metrics of Register — and
// serves that multiplexer itself, because controller-runtime's Start has no bound on
// connections and reads headers for 32 s with up to 1 MiB of them: any pod that reaches the
// Service could hold thousands of connections open. Here every connection is bounded:
//
//   - at most Limits.MaxConnections at once, and Limits.MaxConnectionsPerClient from one
//     client address; one more is closed as soon as it is accepted;
//   - the TLS handshake and the request headers must arrive within Limits.HeaderTimeout, the
//     headers within MaxHeaderBytes; an idle keep-alive connection is closed after
//     Limits.IdleTimeout; a response is written within MaxRequestDuration plus the body time;
//   - the requests themselves are bounded by the limiter (Webhooks.Register): in flight, per
//     client, body bytes and body read time.
type tlsServer struct {
	ctrlwebhook.Server // Register (with metrics) and WebhookMux
	opts               ctrlwebhook.Options
	limits             Limits
	log                logr.Logger

	started atomic.Bool
}

var _ ctrlwebhook.Server = (*tlsServer)(nil)

// NewServer returns the webhook server `serve` runs: controller-runtime's options (address,
// certificates, TLS), the connection limits and timeouts of limits. Webhooks.Register serves
// the webhooks on it, within the request limits of its own Options.
func NewServer(opts ctrlwebhook.Options, limits Limits, log logr.Logger) ctrlwebhook.Server {
	registerMetrics()
	opts.CertName, opts.KeyName = orDefault(opts.CertName, "tls.crt"), orDefault(opts.KeyName, "tls.key")
	if opts.Port == 0 {
		opts.Port = ctrlwebhook.DefaultPort
	}
	return &tlsServer{Server: ctrlwebhook.NewServer(opts), opts: opts, limits: limits.withDefaults(), log: log}
}

// maxHeaderBytes bounds a request's headers: the API server sends about 1 KiB (a bearer
// token, when configured, a few more).
const maxHeaderBytes = 16 << 10

// Start serves until ctx ends, then shuts down within a minute (in-flight requests finish).
func (s *tlsServer) Start(ctx context.Context) error {
	cfg := &tls.Config{NextProtos: []string{"h2"}}
	for _, op := range s.opts.TLSOpts {
		op(cfg)
	}
	if cfg.GetCertificate == nil {
		watcher, err := certwatcher.New(filepath.Join(s.opts.CertDir, s.opts.CertName), filepath.Join(s.opts.CertDir, s.opts.KeyName))
		if err != nil {
			return fmt.Errorf("reading the serving certificate: %w", err)
		}
		cfg.GetCertificate = watcher.GetCertificate
		go func() {
			if err := watcher.Start(ctx); err != nil {
				s.log.Error(err, "certificate watcher failed")
			}
		}()
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port)))
	if err != nil {
		return err
	}
	conns := newConnLimiter(ln, s.limits.MaxConnections, s.limits.MaxConnectionsPerClient)
	srv := &http.Server{
		Handler:           s.WebhookMux(),
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: s.limits.HeaderTimeout, // also bounds the TLS handshake
		WriteTimeout:      s.limits.HeaderTimeout + s.limits.BodyTimeout + MaxRequestDuration,
		IdleTimeout:       s.limits.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// A failed handshake or a closed connection is the client's business, not an error of
		// the server: logged at debug level only.
		ErrorLog: log.New(logrWriter{s.log.V(1)}, "", 0),
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			s.log.Error(err, "shutting down the webhook server")
		}
	}()
	s.started.Store(true)
	s.log.Info("serving webhooks", "host", s.opts.Host, "port", s.opts.Port,
		"maxConnections", s.limits.MaxConnections, "maxConnectionsPerClient", s.limits.MaxConnectionsPerClient,
		"headerTimeout", s.limits.HeaderTimeout, "idleTimeout", s.limits.IdleTimeout)
	if err := srv.Serve(tls.NewListener(conns, cfg)); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-closed
	return nil
}

// StartedChecker passes once the server listens and completes a TLS handshake.
func (s *tlsServer) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		if !s.started.Load() {
			return errors.New("the webhook server has not started yet")
		}
		d := &net.Dialer{Timeout: 10 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", net.JoinHostPort(s.opts.Host, strconv.Itoa(s.opts.Port)),
			&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only that it answers TLS
		if err != nil {
			return fmt.Errorf("the webhook server is not reachable: %w", err)
		}
		return conn.Close()
	}
}

// logrWriter writes the HTTP server's log lines to a logger.
type logrWriter struct{ log logr.Logger }

func (w logrWriter) Write(p []byte) (int, error) {
	w.log.Info(string(p))
	return len(p), nil
}

// connLimiter is a listener that holds at most max connections at once, and at most perClient
// from one client address (IP). A connection beyond either is closed as soon as it is accepted,
// so a client that opens connections and sends nothing cannot crowd out the API server.
type connLimiter struct {
	net.Listener
	max, perClient int

	mu       sync.Mutex
	open     int
	byClient map[string]int
}

func newConnLimiter(ln net.Listener, max, perClient int) *connLimiter {
	return &connLimiter{Listener: ln, max: max, perClient: perClient, byClient: map[string]int{}}
}

// Accept returns the next connection within the limits.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := clientOf(c.RemoteAddr())
		if !l.acquire(client) {
			refusedConnections.Inc()
			_ = c.Close()
			continue
		}
		return &limitedConn{Conn: c, release: sync.OnceFunc(func() { l.release(client) })}, nil
	}
}

func (l *connLimiter) acquire(client string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max || l.byClient[client] >= l.perClient {
		return false
	}
	l.open++
	l.byClient[client]++
	openConnections.Inc()
	return true
}

func (l *connLimiter) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byClient[client]--; l.byClient[client] <= 0 {
		delete(l.byClient, client)
	}
	openConnections.Dec()
}

// limitedConn releases its place in the limiter when closed.
type limitedConn struct {
	net.Conn
	release func()
}

func (c *limitedConn) Close() error {
	c.release()
	return c.Conn.Close()
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
