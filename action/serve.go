package action

import (
	"context"
	"time"

	"github.com/go-logr/logr"

	"github.com/driverguard/driverguard/audit"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/serve"
	"github.com/driverguard/driverguard/webhook"
)

// ServerOptions configure the admission webhook server; AuditOptions its audit.
type (
	ServerOptions = serve.Options
	AuditOptions  = serve.AuditOptions
)

// Defaults of serve's audit.
const (
	DefaultAuditInterval      = audit.DefaultInterval
	DefaultAuditImageInterval = audit.DefaultImageInterval
)

// WebhooksAnnotation is the annotation of a webhook configuration that holds the webhooks
// Serve registers (ServerOptions.RegisterWebhooks).
const WebhooksAnnotation = serve.AnnotationWebhooks

// Serve runs the admission webhook (`driverguard serve`): it loads the policies (refusing to
// start when they do not compile), watches the cluster of Kubeconfig and serves until ctx
// ends.
type Serve struct {
	// Server configures the server; Run sets its Logger and Policy.
	Server ServerOptions
	// Kubeconfig is the cluster to watch (empty: the in-cluster config, or KUBECONFIG).
	Kubeconfig string
	// Policy are the policy directories, watched and reloaded every PolicyPoll too.
	Policy     Policy
	PolicyPoll time.Duration
	// MemoryLimit is the memory serve may use, in bytes (0: its container's limit, if any);
	// it keeps its Go memory under 55% of it (GOMEMLIMIT, unless the environment sets one).
	MemoryLimit int64
	// Logger is the server's structured log.
	Logger logr.Logger
}

// CertRotation configures the self-signed certificate Serve bootstraps and rotates.
type CertRotation = serve.CertRotation

// NewServe returns a Serve with the server's default limits.
func NewServe() *Serve {
	s := &Serve{PolicyPoll: DefaultPolicyPoll, Policy: Policy{Timeout: DefaultPolicyTimeout}}
	s.Server.Limits = webhook.Limits{
		MaxInFlight:             webhook.DefaultMaxInFlight,
		MaxInFlightPerClient:    webhook.DefaultMaxInFlightPerClient,
		BodyTimeout:             webhook.DefaultBodyTimeout,
		HeaderTimeout:           webhook.DefaultHeaderTimeout,
		IdleTimeout:             webhook.DefaultIdleTimeout,
		MaxConnections:          webhook.DefaultMaxConnections,
		MaxConnectionsPerClient: webhook.DefaultMaxConnectionsPerClient,
	}
	return s
}

// Run serves until ctx ends.
func (s *Serve) Run(ctx context.Context) error {
	log := s.Logger
	// Policies first: a directory that does not compile is refused before anything connects.
	// The engine registers its metrics with controller-runtime's registry, which the
	// webhook's metrics endpoint serves.
	engine, err := s.Policy.newEngine(ctx, policy.Options{Logger: log.WithName("policy"), PollInterval: s.PolicyPoll})
	if err != nil {
		return err
	}
	cfg, err := apiServerOf(cluster.Target{Kubeconfig: s.Kubeconfig}).restConfig("watch", "driverguard-webhook", 0)
	if err != nil {
		return err
	}
	s.Server.Logger = log.WithName("webhook")
	s.Server.Policy, s.Server.PolicyStatus = engine, engine.Status
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = engine.Start(ctx) }() // returns when ctx ends
	setMemoryLimit(log, s.MemoryLimit)
	s.Server.OnState = func(st *cluster.Informed) {
		// The first sync (every node listed and converted) is the one burst of garbage; it
		// runs at Go's default target, steady serving at serve's.
		go func() {
			if st.WaitFor(ctx, func(*cluster.Snapshot) bool { return true }) == nil {
				setGCPercent(log)
			}
		}()
	}
	return serve.Run(ctx, cfg, s.Server)
}
