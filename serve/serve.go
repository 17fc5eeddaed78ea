package serve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"
	"unique"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	openreports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"

	"github.com/driverguard/driverguard/api/v1alpha1"
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

	// Audit, when set, keeps the audit of what is stored running on one replica (SPEC §9):
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
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	minTLS := o.TLSMinVersion
	if minTLS == 0 {
		minTLS = tls.VersionTLS13
	}
	if minTLS < tls.VersionTLS12 {
		return fmt.Errorf("TLS minimum version %#x is below TLS 1.2", minTLS)
	}
	var clientCAs *x509.CertPool
	if o.ClientCAFile != "" {
		pem, err := os.ReadFile(o.ClientCAFile)
		if err != nil {
			return fmt.Errorf("reading the client CA file: %w", err)
		}
		clientCAs = x509.NewCertPool()
		if !clientCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("the client CA file %s holds no PEM certificate", o.ClientCAFile)
		}
	}
	srv := webhook.NewServer(ctrlwebhook.Options{
		Host: o.Host, Port: o.Port, CertDir: o.CertDir, CertName: o.CertName, KeyName: o.KeyName,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) {
			c.MinVersion = minTLS
			if !o.EnableHTTP2 {
				c.NextProtos = []string{"http/1.1"}
			}
			if clientCAs != nil {
				c.ClientCAs, c.ClientAuth = clientCAs, tls.RequireAndVerifyClientCert
			}
		}},
	}, o.Limits, log.WithName("server"))
	shutdownTimeout := o.ShutdownTimeout
	if shutdownTimeout <= 0 {
		shutdownTimeout = 30 * time.Second
	}
	if err := openreports.Install(scheme); err != nil {
		return err
	}
	mo := manager.Options{
		Scheme: scheme,
		Logger: log,
		// The health and metrics endpoints are served within statusLimits (status.go), not by
		// controller-runtime's unbounded servers.
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		GracefulShutdownTimeout: &shutdownTimeout,
		Cache: ctrlcache.Options{
			DefaultTransform: ctrlcache.TransformStripManagedFields(),
			ByObject:         map[client.Object]ctrlcache.ByObject{&corev1.Node{}: {Transform: nodeLabelsOnly}},
		},
		WebhookServer: srv,
	}
	if a := o.Audit; a != nil && a.LeaderElection {
		mo.LeaderElection, mo.LeaderElectionID, mo.LeaderElectionNamespace = true, a.LeaseName, a.LeaseNamespace
		mo.LeaderElectionResourceLock = "leases"
		mo.LeaderElectionReleaseOnCancel = true
		for _, d := range []struct {
			to **time.Duration
			v  time.Duration
		}{{&mo.LeaseDuration, a.LeaseDuration}, {&mo.RenewDeadline, a.RenewDeadline}, {&mo.RetryPeriod, a.RetryPeriod}} {
			if d.v > 0 {
				*d.to = &d.v
			}
		}
	}
	mgr, err := manager.New(cfg, mo)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}

	state := cluster.NewInformed(mgr.GetCache(), cluster.InformedOptions{Logger: log.WithName("cluster-view"), RebuildDelay: o.RebuildDelay})
	if err := mgr.Add(state); err != nil {
		return err
	}
	webhook.New(state, o.Options).Register(srv)
	if a := o.Audit; a != nil {
		if err := addAudit(mgr, state, o, log.WithName("audit")); err != nil {
			return err
		}
	}
	if o.OnState != nil {
		o.OnState(state)
	}

	certsReady := make(chan struct{})
	if r := o.CertRotation; r != nil {
		if r.Namespace == "" || r.SecretName == "" || r.ServiceName == "" {
			return errors.New("certificate rotation needs the namespace, the Secret name and the Service name")
		}
		var webhooks []rotator.WebhookInfo
		if n := o.WebhookConfigurations.Validating; n != "" {
			webhooks = append(webhooks, rotator.WebhookInfo{Name: n, Type: rotator.Validating})
		}
		if n := o.WebhookConfigurations.Mutating; n != "" {
			webhooks = append(webhooks, rotator.WebhookInfo{Name: n, Type: rotator.Mutating})
		}
		dns := r.ServiceName + "." + r.Namespace + ".svc"
		if err := rotator.AddRotator(mgr, &rotator.CertRotator{
			SecretKey:      types.NamespacedName{Namespace: r.Namespace, Name: r.SecretName},
			CertDir:        o.CertDir,
			CAName:         "driverguard-webhook-ca",
			CAOrganization: "driverguard",
			DNSName:        dns,
			ExtraDNSNames:  []string{dns + ".cluster.local"},
			IsReady:        certsReady,
			Webhooks:       webhooks,
			// Every replica serves, so every replica must see the certificates.
			RequireLeaderElection: false,
			EnableReadinessCheck:  true,
			// Controller names are unique per process (controller-runtime refuses a second
			// "cert-rotator"); naming it after its Secret lets tests run two serves in one.
			ControllerName: "cert-rotator-" + r.Namespace + "-" + r.SecretName,
		}); err != nil {
			return fmt.Errorf("setting up certificate rotation: %w", err)
		}
	} else {
		close(certsReady)
	}
	// The server reads its certificate when it starts: wait for the rotator to write it.
	if err := mgr.Add(&waitingServer{Server: srv, ready: certsReady}); err != nil {
		return err
	}

	registrar, err := newRegistrar(cfg, o, log.WithName("registrar"))
	if err != nil {
		return err
	}
	var draining atomic.Bool
	if addr := orDefault(o.HealthAddr, "0"); addr != "0" {
		ready := map[string]healthz.Checker{
			"webhook-server": srv.StartedChecker(),
			"cluster-view":   state.Ready,
			"shutdown": func(*http.Request) error {
				if draining.Load() {
					return errors.New("shutting down")
				}
				return nil
			},
		}
		if registrar != nil {
			// A pod whose webhooks the API server does not call judges nothing: it is not
			// ready, so `helm install --wait` and a rollout say so instead of succeeding.
			ready["webhook-registration"] = registrar.Registered
		}
		if err := mgr.Add(healthServer(addr, map[string]healthz.Checker{"ping": healthz.Ping}, ready, log.WithName("health"))); err != nil {
			return err
		}
	}
	if addr := orDefault(o.MetricsAddr, "0"); addr != "0" {
		ms, err := metricsServer(o, cfg, certsReady, func(c *tls.Config) { c.MinVersion = minTLS }, log.WithName("metrics"))
		if err != nil {
			return err
		}
		if err := mgr.Add(ms); err != nil {
			return err
		}
	}
	if o.OnReady != nil {
		if err := mgr.Add(everyReplica(func(ctx context.Context) error {
			return waitReady(ctx, srv.StartedChecker(), state.Ready, o.OnReady)
		})); err != nil {
			return err
		}
	}
	if registrar != nil {
		registrar.Events = mgr.GetEventRecorder("driverguard-webhook")
		// Written only once this replica answers (the API server calls no webhook before);
		// until then the registrar checks with dry runs that it may write them. Every replica
		// registers (its readiness waits for it), not the audit's leader alone.
		serving := make(chan struct{})
		registrar.Serving = serving
		if err := mgr.Add(everyReplica(func(ctx context.Context) error {
			go func() { _ = waitReady(ctx, srv.StartedChecker(), state.Ready, func() { close(serving) }) }()
			return registrar.Run(ctx)
		})); err != nil {
			return err
		}
	}

	// The manager stops ShutdownDelay after ctx ends; meanwhile /readyz fails.
	mgrCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
		case <-mgrCtx.Done():
			return
		}
		draining.Store(true)
		log.Info("shutting down: not ready, still serving", "delay", o.ShutdownDelay)
		select {
		case <-time.After(o.ShutdownDelay):
		case <-mgrCtx.Done():
		}
		stop()
	}()
	log.Info("starting the webhook server", "port", o.Port, "certDir", o.CertDir, "tlsMinVersion", tls.VersionName(minTLS),
		"certRotation", o.CertRotation != nil, "policy", o.Policy != nil, "policyFailOpen", o.PolicyFailOpen)
	return mgr.Start(mgrCtx)
}

// nodeLabelsOnly keeps of a node what the webhook reads (its name and labels): at 10,000
// nodes, their managed fields, annotations and status would be most of the informer cache and
// of the garbage collector's work. The cluster view watches nodes as metadata
// (PartialObjectMetadata), and this transform, keyed by the Node kind, replaces the default
// one (which strips managed fields) for both forms.
func nodeLabelsOnly(obj any) (any, error) {
	keep := func(m *metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion, Generation: m.Generation,
			Labels: internLabels(m.Labels), DeletionTimestamp: m.DeletionTimestamp,
		}
	}
	switch n := obj.(type) {
	case *corev1.Node:
		return &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: keep(&n.ObjectMeta)}, nil
	case *metav1.PartialObjectMetadata:
		return &metav1.PartialObjectMetadata{TypeMeta: n.TypeMeta, ObjectMeta: keep(&n.ObjectMeta)}, nil
	}
	return obj, nil
}

// internLabels copies labels with canonical strings: the keys and most values (families, OS,
// kernels, "true") repeat on every node, so 10,000 nodes share one copy of each instead of
// holding their own, which the garbage collector would otherwise visit on every cycle.
func internLabels(labels map[string]string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[unique.Make(k).Value()] = unique.Make(v).Value()
	}
	return out
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
