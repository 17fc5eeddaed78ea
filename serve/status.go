package serve

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"

	"github.com/driverguard/driverguard/webhook"
)

// statusLimits bound the health and metrics endpoints: a kubelet probe and a Prometheus scrape
// need a few connections; controller-runtime's own servers take any number, each with up to
// 1 MiB of headers for 32 s (a few hundred such connections exhaust a 256 MiB pod).
var statusLimits = webhook.Limits{
	HeaderTimeout: webhook.DefaultHeaderTimeout, BodyTimeout: webhook.DefaultBodyTimeout, IdleTimeout: webhook.DefaultIdleTimeout,
	MaxConnections: 64, MaxConnectionsPerClient: 16,
}

// statusServer serves a handler on an address within statusLimits, plain or over TLS, until
// the manager stops. It runs on every replica (no leader election).
type statusServer struct {
	name    string
	addr    string
	handler http.Handler
	tls     *tls.Config // nil: plain HTTP
	log     logr.Logger
	// setup, if set, runs when the server starts, once certs (if set) is closed: it may set tls.
	certs <-chan struct{}
	setup func(ctx context.Context) error
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica serves.
func (s *statusServer) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (s *statusServer) Start(ctx context.Context) error {
	if s.certs != nil {
		select {
		case <-s.certs:
		case <-ctx.Done():
			return nil
		}
	}
	if s.setup != nil {
		if err := s.setup(ctx); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("the %s endpoint: %w", s.name, err)
	}
	s.log.Info("serving", "endpoint", s.name, "addr", s.addr, "tls", s.tls != nil)
	return webhook.ServeBounded(ctx, ln, s.tls, s.handler, statusLimits, 5*time.Second, s.log)
}

// healthServer serves /healthz (liveness) and /readyz (readiness), each check also on its own
// path (/readyz/<check>), as controller-runtime's health probe server does.
func healthServer(addr string, live, ready map[string]healthz.Checker, log logr.Logger) *statusServer {
	mux := http.NewServeMux()
	for path, checks := range map[string]map[string]healthz.Checker{"/healthz": live, "/readyz": ready} {
		h := http.StripPrefix(path, &healthz.Handler{Checks: checks})
		mux.Handle(path, h)
		mux.Handle(path+"/", h)
	}
	return &statusServer{name: "health", addr: addr, handler: mux, log: log}
}

// metricsServer serves the Prometheus metrics of controller-runtime's registry at /metrics
// plus extra handlers. Secure: over TLS with the webhook's certificate (reloaded when it
// changes, once certs is closed), only for callers whose bearer token the API server
// authenticates and authorizes for the path (controller-runtime's filter: TokenReview,
// SubjectAccessReview).
func metricsServer(o Options, cfg *rest.Config, certs <-chan struct{}, tlsConfig func(*tls.Config), log logr.Logger) (*statusServer, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(ctrlmetrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	for path, h := range statusHandlers(o) {
		mux.Handle(path, h)
	}
	s := &statusServer{name: "metrics", addr: o.MetricsAddr, handler: mux, log: log}
	if !o.MetricsSecure {
		return s, nil
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client for the metrics filter: %w", err)
	}
	filter, err := filters.WithAuthenticationAndAuthorization(cfg, client)
	if err != nil {
		return nil, fmt.Errorf("the metrics filter: %w", err)
	}
	if s.handler, err = filter(log, mux); err != nil {
		return nil, fmt.Errorf("the metrics filter: %w", err)
	}
	s.certs = certs
	s.setup = func(ctx context.Context) error {
		watcher, err := certwatcher.New(filepath.Join(o.CertDir, orDefault(o.CertName, "tls.crt")), filepath.Join(o.CertDir, orDefault(o.KeyName, "tls.key")))
		if err != nil {
			return fmt.Errorf("reading the metrics certificate: %w", err)
		}
		go func() {
			if err := watcher.Start(ctx); err != nil {
				log.Error(err, "certificate watcher failed")
			}
		}()
		s.tls = &tls.Config{GetCertificate: watcher.GetCertificate, NextProtos: []string{"http/1.1"}} //nolint:gosec // MinVersion set by tlsConfig
		tlsConfig(s.tls)
		return nil
	}
	return s, nil
}

// statusHandlers are the extra endpoints of the metrics server.
func statusHandlers(o Options) map[string]http.Handler {
	out := map[string]http.Handler{}
	if o.PolicyStatus != nil {
		out["/policyz"] = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			st := o.PolicyStatus()
			w.Header().Set("Content-Type", "application/json")
			if !st.Healthy() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			_ = json.NewEncoder(w).Encode(st)
		})
	}
	if o.EnableProfiling {
		out["/debug/pprof/"] = http.HandlerFunc(pprof.Index)
		out["/debug/pprof/profile"] = http.HandlerFunc(pprof.Profile)
		out["/debug/pprof/heap"] = pprof.Handler("heap")
		out["/debug/pprof/allocs"] = pprof.Handler("allocs")
		out["/debug/pprof/goroutine"] = pprof.Handler("goroutine")
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
