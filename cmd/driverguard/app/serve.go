package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/webhook"
)

type serveOptions struct {
	server        webhook.ServerOptions
	kubeconfig    string
	tlsMinVersion string
	logFormat     string
	logLevel      string
	certRotation  bool
	rotation      webhook.CertRotation
	policy        policyFlags
	policyPoll    time.Duration
}

func newServeCommand(s Streams) *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the admission webhook (validating RBLNDrivers and RBLNClusterPolicies, mutating driver DaemonSets)",
		Long: `serve runs the admission webhook over TLS: it validates RBLNDriver and RBLNClusterPolicy
objects (syntax, selector conflicts against the live nodes and drivers, policies) and completes
driver DaemonSets with pool-composed images. It watches Nodes (metadata only), RBLNDrivers and
RBLNClusterPolicies.

Certificates are read from --cert-dir and reloaded when they change. With --cert-rotation it
bootstraps a self-signed CA and serving certificate into --cert-secret, renews them, and
injects the CA into the webhook configurations (clusters without cert-manager); --cert-dir is
then where that Secret is mounted.

RBLNDriver and RBLNClusterPolicy requests are evaluated by the bundled policy library plus the
Rego policies of every --policy-dir (e.g. a mounted ConfigMap). The directories are watched:
a change takes effect without a restart, and a file that does not compile is logged with its
file and line while the previous policies stay in force (metric driverguard_policy_load_failed).
serve does not start when the policies do not compile at start-up.

/healthz and /readyz are served on --health-addr (ready once the webhook listens and the
cluster view has synced); Prometheus metrics and /policyz (the policy set and the latest
failed reload, with file and line) on --metrics-addr. On SIGTERM the server reports
not ready for --shutdown-delay, then stops accepting connections and lets in-flight requests
finish within --shutdown-timeout.

With --register-webhooks, once it serves, serve writes into the webhook configurations named by
--validating-webhook-configuration and --mutating-webhook-configuration the webhooks their
driverguard.rebellions.ai/webhooks annotation holds (the chart's configurations carry none
until then, so a fresh install never calls a webhook that is not running), keeps an injected
caBundle, and writes them again whenever they change or disappear.`,
		Example: `  driverguard serve --cert-dir /certs
  driverguard serve --cert-rotation --namespace driverguard --cert-secret driverguard-webhook-cert \
    --service-name driverguard-webhook --validating-webhook-configuration driverguard \
    --mutating-webhook-configuration driverguard --register-webhooks`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := newLogHandler(s.Err, o.logFormat, o.logLevel)
			if err != nil {
				return usageError(err)
			}
			// controller-runtime, cert-controller and client-go already log through the
			// process-wide handler; point it at the structured log.
			setLogDestination(h)
			log := processLogger()
			switch o.tlsMinVersion {
			case "1.3":
				o.server.TLSMinVersion = tls.VersionTLS13
			case "1.2":
				o.server.TLSMinVersion = tls.VersionTLS12
			default:
				return usageError(fmt.Errorf("--tls-min-version %q: use 1.2 or 1.3", o.tlsMinVersion))
			}
			if o.certRotation {
				if o.rotation.Namespace == "" {
					o.rotation.Namespace = os.Getenv("POD_NAMESPACE")
				}
				if o.rotation.Namespace == "" || o.rotation.SecretName == "" || o.rotation.ServiceName == "" {
					return usageError(errors.New("--cert-rotation needs --namespace (or POD_NAMESPACE), --cert-secret and --service-name"))
				}
				o.server.CertRotation = &o.rotation
			}
			// Policies first: a directory that does not compile is refused before anything
			// connects. The engine registers its metrics with controller-runtime's registry,
			// which the webhook's metrics endpoint serves.
			engine, err := o.policy.newEngine(cmd.Context(), policy.Options{Logger: log.WithName("policy"), PollInterval: o.policyPoll})
			if err != nil {
				return err
			}
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = o.kubeconfig
			cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
			if err != nil {
				return usageError(fmt.Errorf("no cluster to watch (in-cluster config, --kubeconfig or KUBECONFIG): %w", err))
			}
			cfg.UserAgent = "driverguard-webhook"
			o.server.Logger = log.WithName("webhook")
			o.server.Policy, o.server.PolicyStatus = engine, engine.Status
			ctx, stop := context.WithCancel(cmd.Context())
			defer stop()
			go func() { _ = engine.Start(ctx) }() // returns when ctx ends
			setMemoryLimit(log)
			o.server.OnState = func(st *webhook.CacheState) {
				// The first sync (every node listed and converted) is the one burst of
				// garbage; it runs at Go's default target, steady serving at serve's.
				go func() {
					if st.WaitFor(ctx, func(*webhook.Snapshot) bool { return true }) == nil {
						setGCPercent(log)
					}
				}()
			}
			return webhook.Run(ctx, cfg, o.server)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config, or KUBECONFIG)")
	f.StringVar(&o.server.Host, "host", "", "address to serve the webhook on (default: all)")
	f.IntVar(&o.server.Port, "port", 9443, "port to serve the webhook on")
	f.StringVar(&o.server.CertDir, "cert-dir", "/certs", "directory holding the serving certificate and key; reloaded when they change")
	f.StringVar(&o.server.CertName, "cert-name", "tls.crt", "certificate file in --cert-dir")
	f.StringVar(&o.server.KeyName, "key-name", "tls.key", "key file in --cert-dir")
	f.StringVar(&o.tlsMinVersion, "tls-min-version", "1.3", "lowest TLS version accepted: 1.2 or 1.3")
	f.BoolVar(&o.server.EnableHTTP2, "enable-http2", false, "also serve HTTP/2 (off: the API server uses HTTP/1.1, and HTTP/2 has had denial-of-service advisories)")
	f.StringVar(&o.server.ClientCAFile, "client-ca-file", "", "require callers to present a client certificate signed by a CA in this PEM file (the API server's, from its AdmissionConfiguration)")
	f.IntVar(&o.server.Limits.MaxInFlight, "max-requests-in-flight", webhook.DefaultMaxInFlight, "admission requests served at once; more are answered 429 before their body is read")
	f.IntVar(&o.server.Limits.MaxInFlightPerClient, "max-requests-in-flight-per-client", webhook.DefaultMaxInFlightPerClient, "admission requests served at once for one client address; more are answered 429 before their body is read")
	f.DurationVar(&o.server.Limits.BodyTimeout, "request-body-timeout", webhook.DefaultBodyTimeout, "time to read one request body; a slower body fails its request")
	f.DurationVar(&o.server.Limits.HeaderTimeout, "header-timeout", webhook.DefaultHeaderTimeout, "time for a connection's TLS handshake and request headers; a slower connection is closed")
	f.DurationVar(&o.server.Limits.IdleTimeout, "idle-timeout", webhook.DefaultIdleTimeout, "time a kept-alive connection may wait for its next request")
	f.IntVar(&o.server.Limits.MaxConnections, "max-connections", webhook.DefaultMaxConnections, "open connections at once; more are closed as soon as they are accepted")
	f.IntVar(&o.server.Limits.MaxConnectionsPerClient, "max-connections-per-client", webhook.DefaultMaxConnectionsPerClient, "open connections from one client address; more are closed as soon as they are accepted")
	f.StringVar(&o.server.MetricsAddr, "metrics-addr", ":8080", "address of the Prometheus metrics endpoint; 0 disables it")
	f.BoolVar(&o.server.MetricsSecure, "metrics-secure", false, "serve --metrics-addr over HTTPS (the webhook's certificate) to callers whose token the API server authenticates and authorizes (get on the path, e.g. nonResourceURLs /metrics)")
	f.StringVar(&o.server.HealthAddr, "health-addr", ":8081", "address of /healthz and /readyz; 0 disables them")
	f.BoolVar(&o.server.EnableProfiling, "enable-profiling", false, "serve Go's pprof profiles under /debug/pprof/ on --metrics-addr (for diagnosing CPU and memory)")
	f.DurationVar(&o.server.ShutdownDelay, "shutdown-delay", 5*time.Second, "on SIGTERM, keep serving but report not ready for this long, so endpoints drop the pod first")
	f.DurationVar(&o.server.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "time for in-flight requests to finish after the delay")
	o.policy.addFlags(f, "policy-dir")
	f.DurationVar(&o.policyPoll, "policy-poll-interval", policy.DefaultPollInterval, "how often the policy directories are re-read besides file system events")
	f.BoolVar(&o.server.PolicyFailOpen, "policy-fail-open", false, "admit RBLNDriver and RBLNClusterPolicy requests (with a warning) when policy evaluation fails; default: refuse them")
	f.BoolVar(&o.certRotation, "cert-rotation", false, "bootstrap and rotate a self-signed certificate (clusters without cert-manager)")
	f.StringVar(&o.rotation.Namespace, "namespace", "", "namespace of the certificate Secret (default: POD_NAMESPACE)")
	f.StringVar(&o.rotation.SecretName, "cert-secret", "", "Secret that holds the self-signed CA and serving certificate (--cert-rotation)")
	f.StringVar(&o.rotation.ServiceName, "service-name", "", "the webhook Service; the certificate is issued for <service>.<namespace>.svc (--cert-rotation)")
	f.StringVar(&o.server.WebhookConfigurations.Validating, "validating-webhook-configuration", "", "ValidatingWebhookConfiguration to register the webhooks in (--register-webhooks) and inject the CA into (--cert-rotation)")
	f.StringVar(&o.server.WebhookConfigurations.Mutating, "mutating-webhook-configuration", "", "MutatingWebhookConfiguration to register the webhooks in (--register-webhooks) and inject the CA into (--cert-rotation)")
	f.BoolVar(&o.server.RegisterWebhooks, "register-webhooks", false, "once serving, write the webhooks that the configurations' "+webhook.AnnotationWebhooks+" annotation holds into them, and keep them there (the chart's configurations carry no webhooks until a pod serves)")
	f.StringVar(&o.server.CAFile, "ca-file", "", "CA written into webhooks that have no caBundle yet (--register-webhooks; default <cert-dir>/ca.crt)")
	f.StringVar(&o.logFormat, "log-format", "json", "log format: json or text")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: error, info, or debug (debug also logs every admission request)")
	return cmd
}

// newLogHandler returns the structured log handler of --log-format and --log-level.
func newLogHandler(w io.Writer, format, level string) (slog.Handler, error) {
	var lvl slog.Level
	switch level {
	case "error":
		lvl = slog.LevelError
	case "info":
		lvl = slog.LevelInfo
	case "debug":
		lvl = slog.Level(-5) // logr V(5): controller-runtime's per-request admission logs
	default:
		return nil, fmt.Errorf("--log-level %q: use error, info or debug", truncateValue(level))
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	switch format {
	case "json":
		h = slog.NewJSONHandler(w, opts)
	case "text":
		h = slog.NewTextHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: use json or text", truncateValue(format))
	}
	return h, nil
}
