package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// tlsServer is the webhook's HTTPS server. It keeps controller-runtime's webhook server for
// what it does well — the path multiplexer and the per-path request metrics of Register — and
// serves that multiplexer itself, because controller-runtime's Start has no bound on
// connections and reads headers for 32 s with up to 1 MiB of them: any pod that reaches the
// Service could hold thousands of connections open. Here every connection is bounded:
//
//   - at most Limits.MaxConnections served at once, and Limits.MaxConnectionsPerClient from
//     one client address; one more is closed as soon as its handshake is done;
//   - half as many may be in their TLS handshake, which must end within Limits.HeaderTimeout;
//     when all of those are taken the oldest is closed, so connections that send nothing
//     cannot keep an honest client (whose handshake takes milliseconds) out;
//   - the request headers must arrive within Limits.HeaderTimeout and MaxHeaderBytes, every
//     read of a request within the header and body timeouts, on every path; an idle
//     keep-alive connection is closed after Limits.IdleTimeout; a response is written within
//     MaxRequestDuration plus the body time; a path with no webhook is answered 404 without
//     its body being read;
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
	mux := s.WebhookMux()
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			refuse(w, http.StatusNotFound, "driverguard webhook: no webhook is served at this path") // and no body read
			return
		}
		mux.ServeHTTP(w, r)
	})
	bl := newBoundedListener(ln, cfg, s.limits.connLimits())
	srv := boundedServer(ctx, bl, handler, s.limits, s.log)
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
	if err := srv.Serve(bl); err != nil && !errors.Is(err, http.ErrServerClosed) {
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

// ServeBounded serves h on ln within limits until ctx ends, then shuts down within
// shutdownTimeout: over TLS when tlsConfig is set (every handshake done by the listener, within
// the header timeout), plain otherwise. The connections are bounded as the webhook server's
// are (Limits.MaxConnections, Limits.MaxConnectionsPerClient, the header, body and idle
// timeouts, 16 KiB of headers); serve's health and metrics endpoints run on it.
func ServeBounded(ctx context.Context, ln net.Listener, tlsConfig *tls.Config, h http.Handler, limits Limits, shutdownTimeout time.Duration, log logr.Logger) error {
	bl := newBoundedListener(ln, tlsConfig, limits.connLimits())
	srv := boundedServer(ctx, bl, h, limits, log)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(bl); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// connLimits are the connection limits of the webhook's listener: half the connections (and
// half of a client's share) may be in their TLS handshake.
func (l Limits) connLimits() connLimits {
	return connLimits{
		open: l.MaxConnections, openPerClient: l.MaxConnectionsPerClient,
		pending: max(l.MaxConnections/2, 1), pendingPerClient: max(l.MaxConnectionsPerClient/2, 1),
		handshake: l.HeaderTimeout,
	}
}

// boundedServer is an HTTP server on ln within limits: headers within the header timeout and
// 16 KiB, every read of a request within the header and body timeouts, the answer within
// MaxRequestDuration more, idle connections closed after the idle timeout, and ln told of
// every connection that ends.
func boundedServer(ctx context.Context, ln *boundedListener, h http.Handler, limits Limits, log logr.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: limits.HeaderTimeout,
		ReadTimeout:       limits.HeaderTimeout + limits.BodyTimeout,
		WriteTimeout:      limits.HeaderTimeout + limits.BodyTimeout + MaxRequestDuration,
		IdleTimeout:       limits.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ConnState:         ln.connState,
		// A failed handshake or a closed connection is the client's business, not an error of
		// the server: logged at debug level only.
		ErrorLog: stdlog.New(logrWriter{log.V(1)}, "", 0),
	}
}

// logrWriter writes the HTTP server's log lines to a logger.
type logrWriter struct{ log logr.Logger }

func (w logrWriter) Write(p []byte) (int, error) {
	w.log.Info(string(p))
	return len(p), nil
}

// orDefault is s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

var (
	metricsOnce     sync.Once
	openConnections = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "driverguard_webhook_connections",
		Help: "Connections open to the webhook server.",
	})
	refusedConnections = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "driverguard_webhook_connections_refused_total",
		Help: "Connections closed as soon as they were accepted: over --max-connections or --max-connections-per-client.",
	})
	evictedRequests = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "driverguard_webhook_requests_evicted_total",
		Help: "Requests whose body read was ended to make room for a newcomer: a slow client held what the API server needed.",
	})
	refusedRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driverguard_webhook_requests_refused_total",
		Help: "Admission requests refused before they were judged: in_flight (429: requests, bytes or JSON values in flight) or too_large (413: over 100,000 JSON values).",
	}, []string{"reason"})
)

func registerMetrics() {
	metricsOnce.Do(func() {
		ctrlmetrics.Registry.MustRegister(openConnections, refusedConnections, refusedRequests, evictedRequests)
	})
}
