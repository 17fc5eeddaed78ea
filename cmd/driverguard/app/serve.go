package app

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/driverguard/driverguard/action"
)

// serveOptions are the flags of serve that are not the job's.
type serveOptions struct {
	tlsMinVersion string
	logFormat     string
	logLevel      string
	certRotation  bool
	rotation      action.CertRotation
	audit         bool
	auditOpts     action.AuditOptions
	leaderElect   bool
	memoryLimit   string
}

func newServeCommand(s Streams) *cobra.Command {
	job := action.NewServe()
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

/healthz and /readyz are served on --health-addr (ready once the webhook listens, the cluster
view has synced and, with --register-webhooks, both configurations hold its webhooks with a
caBundle that verifies its certificate); Prometheus metrics and /policyz (the policy set and the latest
failed reload, with file and line) on --metrics-addr. On SIGTERM the server reports
not ready for --shutdown-delay, then stops accepting connections and lets in-flight requests
finish within --shutdown-timeout.

With --register-webhooks, once it serves, serve writes into the webhook configurations named by
--validating-webhook-configuration and --mutating-webhook-configuration the webhooks their
driverguard.rebellions.ai/webhooks annotation holds (the chart's configurations carry none
until then, so a fresh install never calls a webhook that is not running), keeps an injected
caBundle, and writes them again whenever they change or disappear. While they are not
registered (no permission to update the configurations, a caBundle that does not verify its
certificate) serve is not ready, and says why: the log, the metrics driverguard_webhook_registered
and driverguard_webhook_registration_failures_total{reason}, and an Event on its pod (named by
POD_NAMESPACE, POD_NAME and POD_UID, as the chart passes them).`,
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
			job.Logger = processLogger()
			if err := o.complete(&job.Server); err != nil {
				return usageError(err)
			}
			if job.MemoryLimit, err = memoryLimit(o.memoryLimit); err != nil {
				return usageError(err)
			}
			return job.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&job.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: in-cluster config, or KUBECONFIG)")
	f.StringVar(&job.Server.Host, "host", "", "address to serve the webhook on (default: all)")
	f.IntVar(&job.Server.Port, "port", 9443, "port to serve the webhook on")
	f.StringVar(&job.Server.CertDir, "cert-dir", "/certs", "directory holding the serving certificate and key; reloaded when they change")
	f.StringVar(&job.Server.CertName, "cert-name", "tls.crt", "certificate file in --cert-dir")
	f.StringVar(&job.Server.KeyName, "key-name", "tls.key", "key file in --cert-dir")
	f.StringVar(&o.tlsMinVersion, "tls-min-version", "1.3", "lowest TLS version accepted: 1.2 or 1.3")
	f.BoolVar(&job.Server.EnableHTTP2, "enable-http2", false, "also serve HTTP/2 (off: the API server uses HTTP/1.1, and HTTP/2 has had denial-of-service advisories)")
	f.StringVar(&job.Server.ClientCAFile, "client-ca-file", "", "require callers to present a client certificate signed by a CA in this PEM file (the API server's, from its AdmissionConfiguration)")
	f.IntVar(&job.Server.Limits.MaxInFlight, "max-requests-in-flight", job.Server.Limits.MaxInFlight, "admission requests served at once; more are answered 429 before their body is read")
	f.IntVar(&job.Server.Limits.MaxInFlightPerClient, "max-requests-in-flight-per-client", job.Server.Limits.MaxInFlightPerClient, "admission requests served at once for one client address; more are answered 429 before their body is read")
	durationVar(f, &job.Server.Limits.BodyTimeout, "request-body-timeout", job.Server.Limits.BodyTimeout, requestTimeoutRange, "time to read one request body; a slower body fails its request")
	durationVar(f, &job.Server.Limits.HeaderTimeout, "header-timeout", job.Server.Limits.HeaderTimeout, requestTimeoutRange, "time for a connection's TLS handshake and request headers; a slower connection is closed")
	durationVar(f, &job.Server.Limits.IdleTimeout, "idle-timeout", job.Server.Limits.IdleTimeout, idleTimeoutRange, "time a kept-alive connection may wait for its next request")
	f.IntVar(&job.Server.Limits.MaxConnections, "max-connections", job.Server.Limits.MaxConnections, "open connections at once; more are closed as soon as they are accepted")
	f.IntVar(&job.Server.Limits.MaxConnectionsPerClient, "max-connections-per-client", job.Server.Limits.MaxConnectionsPerClient, "open connections from one client address; more are closed as soon as they are accepted")
	f.StringVar(&job.Server.MetricsAddr, "metrics-addr", ":8080", "address of the Prometheus metrics endpoint; 0 disables it")
	f.BoolVar(&job.Server.MetricsSecure, "metrics-secure", false, "serve --metrics-addr over HTTPS (the webhook's certificate) to callers whose token the API server authenticates and authorizes (get on the path, e.g. nonResourceURLs /metrics)")
	f.StringVar(&job.Server.HealthAddr, "health-addr", ":8081", "address of /healthz and /readyz; 0 disables them")
	f.StringVar(&o.memoryLimit, "memory-limit", "", "the memory serve may use, e.g. 256Mi (default: its container's limit, if any); it keeps its Go memory under 55% of it (GOMEMLIMIT, when set, wins)")
	f.BoolVar(&job.Server.EnableProfiling, "enable-profiling", false, "serve Go's pprof profiles under /debug/pprof/ on --metrics-addr (for diagnosing CPU and memory)")
	durationVar(f, &job.Server.ShutdownDelay, "shutdown-delay", 5*time.Second, shutdownDelayRange, "on SIGTERM, keep serving but report not ready for this long, so endpoints drop the pod first")
	durationVar(f, &job.Server.ShutdownTimeout, "shutdown-timeout", 30*time.Second, shutdownTimeoutRange, "time for in-flight requests to finish after the delay")
	addPolicyFlags(f, &job.Policy, "policy-dir")
	durationVar(f, &job.PolicyPoll, "policy-poll-interval", action.DefaultPolicyPoll, policyPollRange, "how often the policy directories are re-read besides file system events")
	f.BoolVar(&job.Server.PolicyFailOpen, "policy-fail-open", false, "admit RBLNDriver and RBLNClusterPolicy requests (with a warning) when policy evaluation fails; default: refuse them")
	f.BoolVar(&o.certRotation, "cert-rotation", false, "bootstrap and rotate a self-signed certificate (clusters without cert-manager)")
	f.StringVar(&o.rotation.Namespace, "namespace", "", "namespace of the certificate Secret (default: POD_NAMESPACE)")
	f.StringVar(&o.rotation.SecretName, "cert-secret", "", "Secret that holds the self-signed CA and serving certificate (--cert-rotation)")
	f.StringVar(&o.rotation.ServiceName, "service-name", "", "the webhook Service; the certificate is issued for <service>.<namespace>.svc (--cert-rotation)")
	f.StringVar(&job.Server.WebhookConfigurations.Validating, "validating-webhook-configuration", "", "ValidatingWebhookConfiguration to register the webhooks in (--register-webhooks) and inject the CA into (--cert-rotation)")
	f.StringVar(&job.Server.WebhookConfigurations.Mutating, "mutating-webhook-configuration", "", "MutatingWebhookConfiguration to register the webhooks in (--register-webhooks) and inject the CA into (--cert-rotation)")
	f.BoolVar(&job.Server.RegisterWebhooks, "register-webhooks", false, "once serving, write the webhooks that the configurations' "+action.WebhooksAnnotation+" annotation holds into them, and keep them there (the chart's configurations carry no webhooks until a pod serves)")
	f.StringVar(&job.Server.CAFile, "ca-file", "", "CA written into webhooks that have no caBundle yet (--register-webhooks; default <cert-dir>/ca.crt)")
	f.StringVar(&o.logFormat, "log-format", "json", "log format: json or text")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: error, info, or debug (debug also logs every admission request)")
	f.BoolVar(&o.audit, "audit", false, "keep auditing what is stored (docs/audit.md): every RBLNDriver and the RBLNClusterPolicy judged as if created now, the nodes' drift, written as openreports.io ClusterReports")
	durationVar(f, &o.auditOpts.Interval, "audit-interval", action.DefaultAuditInterval, auditIntervalRange, "full audit pass every interval, besides the passes after each change (--audit)")
	durationVar(f, &o.auditOpts.ImageInterval, "audit-image-interval", action.DefaultAuditImageInterval, auditImageIntervalRange, "how often the audit asks the registries for every image the pools pull (--audit-check-images)")
	f.BoolVar(&o.auditOpts.CheckImages, "audit-check-images", false, "the audit asks each registry for every image a pool or RSMD DaemonSet pulls (only a 404 counts as missing)")
	f.StringVar(&o.auditOpts.PullSecretNamespace, "pull-secret-namespace", "", "with --audit-check-images, the namespace the driver DaemonSets run in, where each RBLNDriver's spec.imagePullSecrets are read (get only; default: --namespace, else POD_NAMESPACE)")
	f.StringSliceVar(&o.auditOpts.InsecureRegistries, "insecure-registry", nil, "a registry (host:port, or a host for any port) --audit-check-images may ask over plain HTTP; loopback always may, every other registry is asked over HTTPS only (repeatable)")
	f.IntVar(&o.auditOpts.MaxResults, "audit-max-results", action.DefaultAuditMaxResults, "the most results an audit report lists (its summary counts every one)")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "with --audit, one replica audits, chosen by a Lease in --namespace (or POD_NAMESPACE); every replica admits")
	durationVar(f, &o.auditOpts.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, leaseDurationRange, "how long the other replicas wait before taking the audit over from a leader that stopped renewing its Lease")
	durationVar(f, &o.auditOpts.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, renewDeadlineRange, "how long the leader tries to renew its Lease before it stops auditing (less than the lease duration)")
	durationVar(f, &o.auditOpts.RetryPeriod, "leader-elect-retry-period", 2*time.Second, retryPeriodRange, "how often replicas try to acquire or renew the Lease (less than the renew deadline)")
	return cmd
}

// The ranges of serve's timing flags (each flag's usage shows its own).
var (
	// requestTimeoutRange (--request-body-timeout, --header-timeout): the API server sends a
	// request at once and waits at most 30s for any webhook call, so a longer wait serves
	// nobody; below 1s an honest request from a busy API server is cut off.
	requestTimeoutRange = durationRange{min: time.Second, max: 30 * time.Second,
		low: "an honest request from a busy API server is cut off"}
	// idleTimeoutRange: the API server keeps its connections and reuses them; below 1s every
	// request pays a new TLS handshake, above 10m idle connections hold --max-connections.
	idleTimeoutRange = durationRange{min: time.Second, max: 10 * time.Minute,
		low: "every request pays a new TLS handshake"}
	// shutdownDelayRange: 0 stops serving at once (tests, or a cluster whose endpoints are
	// not load-balanced); above 1m the kubelet's grace period (the chart's 45s) has long ended.
	shutdownDelayRange = durationRange{max: time.Minute, zero: "stop serving at once"}
	// shutdownTimeoutRange: in-flight requests end within the API server's 30s; below 1s they
	// are cut off, above 5m nothing is left to wait for.
	shutdownTimeoutRange = durationRange{min: time.Second, max: 5 * time.Minute,
		low: "in-flight requests are cut off"}
	// policyPollRange: file system events catch most changes; the poll is the safety net.
	// Below 1s re-reading and hashing the policy directories keeps a core busy.
	policyPollRange = durationRange{min: time.Second, max: time.Hour,
		low: "re-reading the policy directories keeps a core busy"}
	// auditIntervalRange: every full pass writes the cluster policy's status.audit (its
	// lastRunTime), so below 10s the audit writes to the API server without pause; changes
	// are audited as they happen anyway, and above 24h the safety net of missed events is gone.
	auditIntervalRange = durationRange{min: 10 * time.Second, max: 24 * time.Hour,
		low: "every pass rewrites the cluster policy's status.audit without pause"}
	// auditImageIntervalRange: each check asks every registry for every image the pools pull;
	// below 1m that is a registry's rate limit, above 24h a deleted image goes unseen for days.
	auditImageIntervalRange = durationRange{min: time.Minute, max: 24 * time.Hour,
		low: "every registry is asked for every image without pause (rate limits)"}
	// The Lease: client-go's leader election needs lease duration > renew deadline > 1.2 ×
	// retry period (complete checks that); a retry period below 100ms hammers the API server,
	// and a lease above 10m leaves the audit without a leader that long after a crash.
	leaseDurationRange = durationRange{min: time.Second, max: 10 * time.Minute}
	renewDeadlineRange = durationRange{min: 500 * time.Millisecond, max: 10 * time.Minute}
	retryPeriodRange   = durationRange{min: 100 * time.Millisecond, max: time.Minute,
		low: "every replica asks the API server for the Lease without pause"}
)

// complete sets the server's TLS version and certificate rotation from the flags.
func (o *serveOptions) complete(server *action.ServerOptions) error {
	switch o.tlsMinVersion {
	case "1.3":
		server.TLSMinVersion = tls.VersionTLS13
	case "1.2":
		server.TLSMinVersion = tls.VersionTLS12
	default:
		return fmt.Errorf("--tls-min-version %q: use 1.2 or 1.3", o.tlsMinVersion)
	}
	// The pod the registration's Events are about (the chart's downward API).
	server.Pod.Namespace, server.Pod.Name, server.Pod.UID = os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME"), os.Getenv("POD_UID")
	if o.certRotation {
		if o.rotation.Namespace == "" {
			o.rotation.Namespace = os.Getenv("POD_NAMESPACE")
		}
		if o.rotation.Namespace == "" || o.rotation.SecretName == "" || o.rotation.ServiceName == "" {
			return errors.New("--cert-rotation needs --namespace (or POD_NAMESPACE), --cert-secret and --service-name")
		}
		server.CertRotation = &o.rotation
	}
	if !o.auditOpts.CheckImages || !o.audit {
		switch {
		case o.auditOpts.PullSecretNamespace != "":
			return errors.New("--pull-secret-namespace is for the audit's registry checks: add --audit --audit-check-images")
		case len(o.auditOpts.InsecureRegistries) > 0:
			return errors.New("--insecure-registry is for the audit's registry checks: add --audit --audit-check-images")
		}
	}
	if err := action.ValidateInsecureRegistries(o.auditOpts.InsecureRegistries); err != nil {
		return err
	}
	if o.audit {
		if err := checkMaxResults("audit-max-results", o.auditOpts.MaxResults); err != nil {
			return err
		}
		if err := checkAuditTimes(o.auditOpts); err != nil {
			return err
		}
		a := o.auditOpts
		a.ImageTimeout = 10 * time.Second
		if a.CheckImages {
			a.PullSecretNamespace = cmp.Or(a.PullSecretNamespace, o.rotation.Namespace, os.Getenv("POD_NAMESPACE"))
			if a.PullSecretNamespace == "" {
				return errors.New("--audit-check-images reads the drivers' pull Secrets from --pull-secret-namespace (default --namespace, else POD_NAMESPACE): give one")
			}
		}
		if o.leaderElect {
			a.LeaderElection, a.LeaseName = true, "driverguard-audit"
			a.LeaseNamespace = cmp.Or(o.rotation.Namespace, os.Getenv("POD_NAMESPACE"))
			if a.LeaseNamespace == "" {
				return errors.New("--audit with --leader-elect needs --namespace (or POD_NAMESPACE) for its Lease; --leader-elect=false audits on every replica")
			}
		}
		server.Audit = &a
	}
	return nil
}

// memoryLimit parses --memory-limit ("" is 0: the container's limit).
func memoryLimit(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 || q.Value() < 64<<20 {
		return 0, fmt.Errorf("--memory-limit %q: give a quantity of at least 64Mi, e.g. 256Mi or 1Gi", s)
	}
	return q.Value(), nil
}

// checkAuditTimes refuses a Lease timing client-go's leader election would refuse (lease
// duration > renew deadline > 1.2 × retry period); each flag's own range is checked when it is
// parsed.
func checkAuditTimes(a action.AuditOptions) error {
	if a.LeaseDuration <= a.RenewDeadline || float64(a.RenewDeadline) <= 1.2*float64(a.RetryPeriod) {
		return fmt.Errorf("--leader-elect-lease-duration %s, --leader-elect-renew-deadline %s, --leader-elect-retry-period %s: the lease duration must be longer than the renew deadline, and the renew deadline longer than 1.2 times the retry period (defaults 15s, 10s, 2s)",
			a.LeaseDuration, a.RenewDeadline, a.RetryPeriod)
	}
	return nil
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
