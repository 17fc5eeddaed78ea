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

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
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
	"github.com/driverguard/driverguard/webhook"
)

// process is the serve process Run assembles, step by step, on one manager: each step adds
// its part (and fills in what later steps use).
type process struct {
	o   Options
	cfg *rest.Config
	log logr.Logger

	// minTLS is the lowest TLS version of the webhook server and the metrics endpoint.
	minTLS uint16
	srv    ctrlwebhook.Server
	mgr    manager.Manager
	// state is the cluster view the webhooks decide with; keys the node labels it keeps.
	state *cluster.Informed
	keys  *cluster.LabelKeys
	// certsReady is closed once the serving certificate exists.
	certsReady chan struct{}
	// registrar writes the webhook configurations (nil: serve registers none).
	registrar *Registrar
	// draining is set once ctx ended: /readyz fails while the server still serves.
	draining atomic.Bool
}

// newScheme is the scheme of the manager's clients: Kubernetes', driverguard's and
// openreports'.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme, openreports.Install} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// newServer makes the webhook server: its address, certificate files and TLS (the minimum
// version, HTTP/2 or not, the client CAs it requires).
func (p *process) newServer() error {
	o := p.o
	p.minTLS = o.TLSMinVersion
	if p.minTLS == 0 {
		p.minTLS = tls.VersionTLS13
	}
	if p.minTLS < tls.VersionTLS12 {
		return fmt.Errorf("TLS minimum version %#x is below TLS 1.2", p.minTLS)
	}
	clientCAs, err := readClientCAs(o.ClientCAFile)
	if err != nil {
		return err
	}
	minTLS := p.minTLS
	p.srv = webhook.NewServer(ctrlwebhook.Options{
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
	}, o.Limits, p.log.WithName("server"))
	return nil
}

// readClientCAs reads the CAs of ClientCAFile (nil when it is empty).
func readClientCAs(file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the client CA file: %w", err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the client CA file %s holds no PEM certificate", file)
	}
	return clientCAs, nil
}

// managerOptions are the manager's: its cache (RBLNDrivers, RBLNClusterPolicies and what
// the audit and the registrar read; the cluster view watches the Nodes itself), the graceful stop,
// and the leader election of the audit, if any.
func (p *process) managerOptions(scheme *runtime.Scheme) manager.Options {
	o := p.o
	shutdownTimeout := o.ShutdownTimeout
	if shutdownTimeout <= 0 {
		shutdownTimeout = 30 * time.Second
	}
	mo := manager.Options{
		Scheme: scheme,
		Logger: p.log,
		// The health and metrics endpoints are served within statusLimits (status.go), not by
		// controller-runtime's unbounded servers.
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		GracefulShutdownTimeout: &shutdownTimeout,
		Cache: ctrlcache.Options{
			DefaultTransform: ctrlcache.TransformStripManagedFields(),
		},
		WebhookServer: p.srv,
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
	return mo
}

// seedListTimeout bounds seedLabelKeys' list of the RBLNDrivers.
const seedListTimeout = 30 * time.Second

// seedLabelKeys makes the node labels the cluster view keeps (p.keys): the operator's, those
// the policies declare and the keys of the RBLNDrivers' selectors, listed once before the
// informers start so that their first list keeps them (a key found later costs a list of
// the nodes that carry it). A failed list is logged: the cluster view adds the keys when
// its informer sees the drivers.
func (p *process) seedLabelKeys(ctx context.Context, scheme *runtime.Scheme) {
	var keys []string
	if pk := p.policyKeys(); pk != nil {
		keys = append(keys, pk()...)
	}
	p.keys = cluster.NewLabelKeys(keys...)
	c, err := client.New(p.cfg, client.Options{Scheme: scheme})
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, seedListTimeout)
		defer cancel()
		var drivers v1alpha1.RBLNDriverList
		if err = c.List(ctx, &drivers); err == nil {
			p.keys.Add(cluster.SelectorKeys(drivers.Items)...)
		}
	}
	if err != nil {
		p.log.Info("listing the RBLNDrivers for the node labels to keep failed; the cluster view reads them once it sees the drivers", "error", err.Error())
	}
}

// policyKeys is how the policies' declared node labels are read (nil without policies).
func (p *process) policyKeys() func() []string {
	if pk, ok := p.o.Policy.(interface{ NodeLabelKeys() []string }); ok {
		return pk.NodeLabelKeys
	}
	return nil
}

// addClusterView adds the cluster view, registers the webhooks deciding with it, adds the
// audit (o.Audit) and hands the view to o.OnState.
func (p *process) addClusterView() error {
	nodes, err := cluster.NodeWatch(p.cfg)
	if err != nil {
		return err
	}
	p.state = cluster.NewInformed(p.mgr.GetCache(), cluster.InformedOptions{Logger: p.log.WithName("cluster-view"), RebuildDelay: p.o.RebuildDelay,
		Nodes: nodes, LabelKeys: p.keys, Reader: p.mgr.GetAPIReader(), PolicyKeys: p.policyKeys()})
	if err := p.mgr.Add(p.state); err != nil {
		return err
	}
	webhook.New(p.state, p.o.Options).Register(p.srv)
	if a := p.o.Audit; a != nil {
		if err := addAudit(p.mgr, p.state, p.o, p.log.WithName("audit")); err != nil {
			return err
		}
	}
	if p.o.OnState != nil {
		p.o.OnState(p.state)
	}
	return nil
}

// addCertificates adds the certificate rotator (o.CertRotation) and the webhook server, which
// reads its certificate when it starts: it waits for the rotator to write it.
func (p *process) addCertificates() error {
	p.certsReady = make(chan struct{})
	if r := p.o.CertRotation; r != nil {
		if err := p.addRotator(r); err != nil {
			return err
		}
	} else {
		close(p.certsReady)
	}
	return p.mgr.Add(&waitingServer{Server: p.srv, ready: p.certsReady})
}

// addRotator adds the rotator of the self-signed certificate, which closes certsReady once
// the certificate is written.
func (p *process) addRotator(r *CertRotation) error {
	if r.Namespace == "" || r.SecretName == "" || r.ServiceName == "" {
		return errors.New("certificate rotation needs the namespace, the Secret name and the Service name")
	}
	var webhooks []rotator.WebhookInfo
	if n := p.o.WebhookConfigurations.Validating; n != "" {
		webhooks = append(webhooks, rotator.WebhookInfo{Name: n, Type: rotator.Validating})
	}
	if n := p.o.WebhookConfigurations.Mutating; n != "" {
		webhooks = append(webhooks, rotator.WebhookInfo{Name: n, Type: rotator.Mutating})
	}
	dns := r.ServiceName + "." + r.Namespace + ".svc"
	if err := rotator.AddRotator(p.mgr, &rotator.CertRotator{
		SecretKey:      types.NamespacedName{Namespace: r.Namespace, Name: r.SecretName},
		CertDir:        p.o.CertDir,
		CAName:         "driverguard-webhook-ca",
		CAOrganization: "driverguard",
		DNSName:        dns,
		ExtraDNSNames:  []string{dns + ".cluster.local"},
		IsReady:        p.certsReady,
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
	return nil
}

// newRegistrar makes the registrar of the webhook configurations (none unless
// o.RegisterWebhooks).
func (p *process) newRegistrar() error {
	var err error
	p.registrar, err = newRegistrar(p.cfg, p.o, p.log.WithName("registrar"))
	return err
}

// addHealth adds the health endpoints (o.HealthAddr): ready once the server started, the
// cluster view synced and the webhooks registered, and no longer once draining.
func (p *process) addHealth() error {
	addr := orDefault(p.o.HealthAddr, "0")
	if addr == "0" {
		return nil
	}
	ready := map[string]healthz.Checker{
		"webhook-server": p.srv.StartedChecker(),
		"cluster-view":   p.state.Ready,
		"shutdown": func(*http.Request) error {
			if p.draining.Load() {
				return errors.New("shutting down")
			}
			return nil
		},
	}
	if p.registrar != nil {
		// A pod whose webhooks the API server does not call judges nothing: it is not
		// ready, so `helm install --wait` and a rollout say so instead of succeeding.
		ready["webhook-registration"] = p.registrar.Registered
	}
	return p.mgr.Add(healthServer(addr, map[string]healthz.Checker{"ping": healthz.Ping}, ready, p.log.WithName("health")))
}

// addMetrics adds the metrics endpoint (o.MetricsAddr), over TLS with the webhook's
// certificate when o.MetricsSecure.
func (p *process) addMetrics() error {
	addr := orDefault(p.o.MetricsAddr, "0")
	if addr == "0" {
		return nil
	}
	minTLS := p.minTLS
	ms, err := metricsServer(p.o, p.cfg, p.certsReady, func(c *tls.Config) { c.MinVersion = minTLS }, p.log.WithName("metrics"))
	if err != nil {
		return err
	}
	return p.mgr.Add(ms)
}

// addOnReady calls o.OnReady once the server serves and the cluster view is synced.
func (p *process) addOnReady() error {
	if p.o.OnReady == nil {
		return nil
	}
	return p.mgr.Add(everyReplica(func(ctx context.Context) error {
		return waitReady(ctx, p.srv.StartedChecker(), p.state.Ready, p.o.OnReady)
	}))
}

// addRegistration runs the registrar on every replica (its readiness waits for it), not the
// audit's leader alone.
func (p *process) addRegistration() error {
	r := p.registrar
	if r == nil {
		return nil
	}
	r.Events = p.mgr.GetEventRecorder("driverguard-webhook")
	// Written only once this replica answers (the API server calls no webhook before); until
	// then the registrar checks with dry runs that it may write them.
	serving := make(chan struct{})
	r.Serving = serving
	return p.mgr.Add(everyReplica(func(ctx context.Context) error {
		go func() { _ = waitReady(ctx, p.srv.StartedChecker(), p.state.Ready, func() { close(serving) }) }()
		return r.Run(ctx)
	}))
}

// drainAfter is the manager's context: it ends ShutdownDelay after ctx does, /readyz failing
// meanwhile. stop ends it (and the goroutine that waits for ctx) at once.
func (p *process) drainAfter(ctx context.Context) (mgrCtx context.Context, stop context.CancelFunc) {
	mgrCtx, stop = context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		select {
		case <-ctx.Done():
		case <-mgrCtx.Done():
			return
		}
		p.draining.Store(true)
		p.log.Info("shutting down: not ready, still serving", "delay", p.o.ShutdownDelay)
		select {
		case <-time.After(p.o.ShutdownDelay):
		case <-mgrCtx.Done():
		}
		stop()
	}()
	return mgrCtx, stop
}
