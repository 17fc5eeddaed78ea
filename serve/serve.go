package serve

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/webhook"
)

// Options configure Run (`driverguard serve`).
type Options struct {
	// Options configure the webhooks' decisions (the policy hook) and their request limits.
	webhook.Options

	// Host and Port the webhook server listens on (all addresses and 9443 by default).
	Host string
	Port int
	// CertDir holds CertName and KeyName (tls.crt, tls.key). The files are watched and
	// reloaded when they change (a renewed Secret, a cert-manager rotation).
	CertDir  string
	CertName string
	KeyName  string
	// TLSMinVersion is tls.VersionTLS13 when zero; tls.VersionTLS12 is the lowest accepted.
	TLSMinVersion uint16
	// EnableHTTP2 serves HTTP/2 as well as HTTP/1.1. Off by default: HTTP/2 stream handling
	// has had denial-of-service advisories (CVE-2023-44487), and the API server speaks 1.1.
	EnableHTTP2 bool
	// ClientCAFile, when set, makes the webhook require a client certificate signed by one of
	// its CAs: the API server's, configured with an AdmissionConfiguration kubeConfigFile.
	// Other callers are refused during the TLS handshake. Read once at start.
	ClientCAFile string

	// MetricsAddr serves Prometheus metrics (controller-runtime's webhook metrics plus the
	// cluster-view metrics); "0" disables it.
	MetricsAddr string
	// MetricsSecure serves MetricsAddr over HTTPS (the webhook's certificate) and lets only
	// callers through whose bearer token the API server authenticates (TokenReview) and
	// authorizes for get on the path (SubjectAccessReview, e.g. nonResourceURLs /metrics):
	// controller-runtime's authentication and authorization filter.
	MetricsSecure bool
	// HealthAddr serves /healthz and /readyz; "0" disables it.
	HealthAddr string

	// ShutdownDelay is how long the server keeps serving, not ready, after ctx ends, so the
	// Service's endpoints drop the pod before it stops accepting connections.
	ShutdownDelay time.Duration
	// ShutdownTimeout bounds the graceful stop (in-flight requests finish within it).
	ShutdownTimeout time.Duration

	// CertRotation, when set, generates a self-signed CA and serving certificate into a
	// Secret, rotates them, and injects the CA into the webhook configurations (for clusters
	// without cert-manager). CertDir must then be where that Secret is mounted.
	CertRotation *CertRotation
	// WebhookConfigurations name the validating and mutating webhook configurations.
	WebhookConfigurations WebhookConfigurationNames
	// RegisterWebhooks writes the webhooks of WebhookConfigurations from their annotation
	// (AnnotationWebhooks) once the server serves, and keeps them there (Registrar). /readyz
	// then also waits for them: the pod is ready only while both configurations hold its
	// webhooks with a caBundle that verifies its certificate (Registrar.Registered).
	RegisterWebhooks bool
	// CAFile is the CA written into webhooks that have no caBundle yet (default
	// CertDir/ca.crt).
	CAFile string
	// Pod is the pod serve runs in (the chart passes its namespace, name and UID through the
	// downward API): the registrar records on it why the webhooks are not registered (Events
	// WebhookRegistrationFailed, WebhooksRegistered). Empty: no Events.
	Pod PodRef

	// RebuildDelay of the cluster view (cluster.DefaultRebuildDelay when zero).
	RebuildDelay time.Duration
	// Logger is the structured logger of the server and of controller-runtime.
	Logger logr.Logger
	// OnReady, if set, is called once the server serves and the cluster view is synced.
	OnReady func()
	// OnState, if set, receives the cluster view the server decides with, before it starts
	// (tests wait on it with cluster.Informed.WaitFor).
	OnState func(*cluster.Informed)
	// EnableProfiling serves Go's pprof profiles under /debug/pprof/ on MetricsAddr.
	EnableProfiling bool
	// PolicyStatus, if set, is served as JSON at /policyz on MetricsAddr: the active policy
	// generation, its files, and the latest failed reload with file and line. It answers 503
	// while the latest reload failed (the last good set stays active). Readiness does not
	// depend on it: failing /readyz would take the webhook down although the last good
	// policies are still enforced.
	PolicyStatus func() policy.Status

	// Audit, when set, keeps the audit of what is stored running on one replica (docs/audit.md "serve --audit"):
	// the cluster view above, judged with Policy (which must then be the policy engine).
	Audit *AuditOptions
}

// CertRotation configures the self-signed certificate bootstrap (cert-controller).
type CertRotation struct {
	// Namespace and SecretName locate the Secret that holds ca.crt, ca.key, tls.crt, tls.key.
	Namespace  string
	SecretName string
	// ServiceName is the webhook Service; the certificate is valid for <svc>.<ns>.svc and
	// <svc>.<ns>.svc.cluster.local.
	ServiceName string
}

// PodRef names a pod.
type PodRef struct {
	Namespace, Name, UID string
}

// WebhookConfigurationNames name the webhook configurations of the release.
type WebhookConfigurationNames struct {
	Validating string
	Mutating   string
}

// Run serves the admission webhooks until ctx ends, then drains: it reports not ready for
// ShutdownDelay, stops accepting connections and lets in-flight requests finish.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	log := o.Logger
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}
	p := &process{o: o, cfg: cfg, log: log}
	if err := p.newServer(); err != nil { // the listener's address and TLS
		return err
	}
	p.seedLabelKeys(ctx, scheme) // the node labels the cluster view keeps, before it lists them
	if p.mgr, err = manager.New(cfg, p.managerOptions(scheme)); err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	for _, step := range []func() error{
		p.addClusterView,  // the informers, the webhooks deciding with them, the audit
		p.addCertificates, // the rotated certificate, if any; the server starts once it exists
		p.newRegistrar,    // the webhook configurations this replica writes, if any
		p.addHealth,       // /healthz and /readyz
		p.addMetrics,      // /metrics
		p.addOnReady,      // o.OnReady once serving with a synced view
		p.addRegistration, // the registrar, writing once this replica answers
	} {
		if err := step(); err != nil {
			return err
		}
	}
	mgrCtx, stop := p.drainAfter(ctx)
	defer stop()
	log.Info("starting the webhook server", "port", o.Port, "certDir", o.CertDir, "tlsMinVersion", tls.VersionName(p.minTLS),
		"certRotation", o.CertRotation != nil, "policy", o.Policy != nil, "policyFailOpen", o.PolicyFailOpen)
	return p.mgr.Start(mgrCtx)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// everyReplica is a runnable of every replica: the manager runs a plain RunnableFunc only on
// the elected leader when leader election is on (the audit's).
type everyReplica func(context.Context) error

func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (everyReplica) NeedLeaderElection() bool { return false }

// waitingServer starts the webhook server once its certificates exist.
type waitingServer struct {
	ctrlwebhook.Server
	ready <-chan struct{}
}

func (w *waitingServer) Start(ctx context.Context) error {
	select {
	case <-w.ready:
	case <-ctx.Done():
		return nil
	}
	return w.Server.Start(ctx)
}

// waitReady polls the checks until all pass, then calls done.
func waitReady(ctx context.Context, server healthz.Checker, view healthz.Checker, done func()) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if server(nil) == nil && view(nil) == nil {
			done()
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
