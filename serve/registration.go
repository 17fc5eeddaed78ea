package serve

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/driverguard/driverguard/api/validation"
)

// Reasons a configuration's webhooks are not (or could not be kept) registered: the reason
// label of driverguard_webhook_registration_failures_total, in the readiness check's message,
// the log and the Events.
const (
	// ReasonForbidden: the API server refused to let serve read or update the configuration
	// (RBAC: the chart's ClusterRole grants get and update on its two, by name).
	ReasonForbidden = "Forbidden"
	// ReasonUnauthorized: serve's credentials were refused.
	ReasonUnauthorized = "Unauthorized"
	// ReasonNotFound: the configuration does not exist (the chart creates it).
	ReasonNotFound = "NotFound"
	// ReasonBadAnnotation: the configuration has no AnnotationWebhooks, or it is not a JSON
	// list of named webhooks.
	ReasonBadAnnotation = "BadAnnotation"
	// ReasonInvalid: the API server refused the webhooks of the annotation as invalid.
	ReasonInvalid = "Invalid"
	// ReasonConflict: every write met a newer version of the configuration.
	ReasonConflict = "Conflict"
	// ReasonNotRegistered: a webhook of the annotation is not in the configuration, or calls
	// something else than the annotation says.
	ReasonNotRegistered = "NotRegistered"
	// ReasonCANotTrusted: a webhook's caBundle does not verify this pod's serving certificate
	// (the API server could not call it): the CA injector has not caught up with a rotation.
	ReasonCANotTrusted = "CANotTrusted"
	// ReasonCertificate: this pod's serving certificate or the CA file cannot be read.
	ReasonCertificate = "Certificate"
	// ReasonAPIError: any other failure to read or write (timeouts, the API server away).
	ReasonAPIError = "APIError"
)

// Reasons of the Events on the pod.
const (
	EventRegistrationFailed = "WebhookRegistrationFailed"
	EventRegistered         = "WebhooksRegistered"
)

var (
	registrationMetricsOnce sync.Once
	registeredWebhooks      = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "driverguard_webhook_registered",
		Help: "1 while every webhook the configuration's driverguard.rebellions.ai/webhooks annotation holds is in it, calling the annotation's Service, with a caBundle that verifies this pod's serving certificate (serve --register-webhooks); 0 otherwise, and /readyz fails.",
	}, []string{"kind", "name"})
	registrationFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "driverguard_webhook_registration_failures_total",
		Help: "Syncs of a webhook configuration that failed, by reason: Forbidden, Unauthorized, NotFound, BadAnnotation, Invalid, Conflict, NotRegistered, CANotTrusted, Certificate, APIError.",
	}, []string{"kind", "name", "reason"})
)

func registerRegistrationMetrics() {
	registrationMetricsOnce.Do(func() { ctrlmetrics.Registry.MustRegister(registeredWebhooks, registrationFailures) })
}

// fixes say what to do about a reason, where the error does not.
var fixes = map[string]string{
	ReasonForbidden:    " (grant serve's ServiceAccount get and update on it: the chart's ClusterRole does, by name)",
	ReasonUnauthorized: " (serve's credentials, its ServiceAccount token, were refused)",
	ReasonInvalid:      " (the webhooks of its annotation are not valid: install it with driverguard's chart)",
}

// registration is what the registrar knows of one configuration.
type registration struct {
	// observed: it has been read at least once; registered then says whether this pod's
	// webhooks are in it.
	observed, registered bool
	// reason and message: why not, or why the last sync failed ("" when all is well).
	reason, message string
}

// Registered is serve's readiness check: nil once every configuration holds this pod's
// webhooks (every webhook its annotation holds, calling the annotation's Service, with a
// caBundle that verifies the serving certificate); otherwise an error saying why.
//
// A sync that could not read a configuration (the API server away, a timeout) keeps what the
// last read found: a moment without the API server must not take every replica out of the
// Service at once.
func (r *Registrar) Registered(*http.Request) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, k := range r.configurations() {
		st := r.status[k.kind+"/"+k.name]
		switch {
		case st == nil:
			errs = append(errs, fmt.Errorf("%s %s: not registered yet (the registrar starts once the server serves and the cluster view has synced)", k.kind, k.name))
		case !st.registered:
			errs = append(errs, fmt.Errorf("%s %s: not registered (%s): %s", k.kind, k.name, st.reason, st.message))
		}
	}
	return errors.Join(errs...)
}

// record keeps what a sync of configuration kind/name found, and says it: the metrics, and on
// a change the log and an Event.
func (r *Registrar) record(kind, name string, o outcome) {
	registerRegistrationMetrics()
	if o.err != nil {
		registrationFailures.WithLabelValues(kind, name, o.reason).Inc()
	}
	next := registration{}
	r.mu.Lock()
	if prev := r.status[kind+"/"+name]; prev != nil {
		next = *prev
	}
	r.mu.Unlock()
	var problem *checkProblem
	switch {
	case o.observed && o.want != nil:
		problem = r.check(o.want, o.live)
		next.observed, next.registered = true, problem == nil
	case o.observed && o.err != nil && o.reason == ReasonNotFound:
		next.observed, next.registered = true, false
	case !next.observed:
		next.registered = false
	}
	switch {
	case o.err != nil:
		next.reason, next.message = o.reason, strings.TrimPrefix(o.err.Error(), kind+" "+name+": ")+fixes[o.reason]
		if problem != nil && problem.reason != ReasonNotRegistered {
			next.reason, next.message = problem.reason, problem.message+"; and "+next.message
		}
	case problem != nil:
		next.reason, next.message = problem.reason, problem.message
		registrationFailures.WithLabelValues(kind, name, problem.reason).Inc()
	default:
		next.reason, next.message = "", ""
	}

	r.mu.Lock()
	if r.status == nil {
		r.status = map[string]*registration{}
	}
	prev, seen := r.status[kind+"/"+name]
	r.status[kind+"/"+name] = &next
	r.mu.Unlock()

	gauge := 0.0
	if next.registered {
		gauge = 1
	}
	registeredWebhooks.WithLabelValues(kind, name).Set(gauge)
	if seen && prev.registered == next.registered && prev.reason == next.reason {
		return
	}
	log := r.Log.WithValues("kind", kind, "name", name)
	switch {
	case next.registered && next.reason == "":
		log.Info("the webhooks are registered with a caBundle that verifies this pod's certificate")
	case next.registered:
		log.Error(errors.New(next.message), "the registrar's sync failed; the webhooks last seen in the configuration call this pod, which stays ready", "reason", next.reason)
	default:
		log.Error(errors.New(next.message), "the webhooks are not registered: this pod is not ready", "reason", next.reason)
	}
}

// forget drops what is known of configuration kind/name: not registered yet, nothing wrong.
func (r *Registrar) forget(kind, name string) {
	r.mu.Lock()
	delete(r.status, kind+"/"+name)
	r.mu.Unlock()
	registerRegistrationMetrics()
	registeredWebhooks.WithLabelValues(kind, name).Set(0)
}

// maxEventNote keeps an Event's note within the 1 kB the API server takes.
const maxEventNote = 960

// announce records an Event on the pod when the registration of the configurations, taken
// together, changed: one Event says everything (the Events API merges Events that differ only
// in their note into one series, which keeps the first note), and its action is the causes
// (Forbidden, CANotTrusted, ...), so a new cause is a new Event.
func (r *Registrar) announce() {
	if r.Events == nil || r.Pod == nil {
		return
	}
	r.mu.Lock()
	var problems, causes []string
	ready := true
	for _, k := range r.configurations() {
		st := r.status[k.kind+"/"+k.name]
		if st == nil {
			r.mu.Unlock()
			return
		}
		ready = ready && st.registered
		if st.reason != "" {
			problems = append(problems, fmt.Sprintf("%s %s (%s): %s", k.kind, k.name, st.reason, st.message))
			if !slices.Contains(causes, st.reason) {
				causes = append(causes, st.reason)
			}
		}
	}
	signature := fmt.Sprint(ready, causes)
	if signature == r.announced {
		r.mu.Unlock()
		return
	}
	r.announced = signature
	r.mu.Unlock()
	switch {
	case len(problems) == 0:
		r.Events.Eventf(r.Pod, nil, corev1.EventTypeNormal, EventRegistered, "Register",
			"%s hold this pod's webhooks, with a caBundle that verifies its serving certificate: ready", strings.Join(r.names(), " and "))
	case ready:
		r.Events.Eventf(r.Pod, nil, corev1.EventTypeWarning, EventRegistrationFailed, strings.Join(causes, ","), "%s",
			validation.Truncate(strings.Join(problems, "; ")+"; the webhooks last seen in the configurations call this pod, which stays ready", maxEventNote))
	default:
		r.Events.Eventf(r.Pod, nil, corev1.EventTypeWarning, EventRegistrationFailed, strings.Join(causes, ","), "%s",
			validation.Truncate("not ready until its webhooks are registered: "+strings.Join(problems, "; "), maxEventNote))
	}
}

func (r *Registrar) names() []string {
	var out []string
	for _, k := range r.configurations() {
		out = append(out, k.kind+" "+k.name)
	}
	return out
}

// checkProblem is why a configuration does not hold this pod's webhooks.
type checkProblem struct{ reason, message string }

// hook is what readiness reads of a webhook of either kind.
type hook struct {
	Name         string                                      `json:"name"`
	ClientConfig admissionregistrationv1.WebhookClientConfig `json:"clientConfig"`
}

func hooksOf(webhooks any) []hook {
	var out []hook
	_ = json.Unmarshal([]byte(jsonOf(webhooks)), &out) // webhook types always round-trip
	return out
}

// check says whether live holds every webhook of want, calling what it says, with a caBundle
// that verifies this pod's serving certificate; nil when it does.
func (r *Registrar) check(want, live any) *checkProblem {
	have := map[string]hook{}
	for _, h := range hooksOf(live) {
		have[h.Name] = h
	}
	var leaf *x509.Certificate
	var intermediates *x509.CertPool
	if r.CertFile != "" {
		var err error
		if leaf, intermediates, err = r.cert.read(r.CertFile); err != nil {
			return &checkProblem{ReasonCertificate, fmt.Sprintf("reading this pod's serving certificate: %v", err)}
		}
	}
	for _, w := range hooksOf(want) {
		h, ok := have[w.Name]
		if !ok {
			return &checkProblem{ReasonNotRegistered, fmt.Sprintf("webhook %s is not in it", w.Name)}
		}
		if !sameTarget(w.ClientConfig, h.ClientConfig) {
			return &checkProblem{ReasonNotRegistered, fmt.Sprintf("webhook %s calls %s, not %s", w.Name, target(h.ClientConfig), target(w.ClientConfig))}
		}
		if leaf != nil {
			if err := verifies(h.ClientConfig.CABundle, leaf, intermediates); err != nil {
				return &checkProblem{ReasonCANotTrusted, fmt.Sprintf("the caBundle of webhook %s does not verify this pod's serving certificate (issued by %q), so the API server cannot call it: %v; the CA injector (serve --cert-rotation, cert-manager's cainjector) writes the CA of the mounted Secret",
					w.Name, leaf.Issuer.String(), err)}
			}
		}
	}
	return nil
}

// sameTarget: a and b call the same URL or Service path (the API server defaults a Service's
// port to 443).
func sameTarget(a, b admissionregistrationv1.WebhookClientConfig) bool {
	norm := func(c admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.WebhookClientConfig {
		c.CABundle = nil
		if c.Service != nil {
			s := *c.Service
			if s.Port == nil {
				port := int32(443)
				s.Port = &port
			}
			c.Service = &s
		}
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func target(c admissionregistrationv1.WebhookClientConfig) string {
	switch {
	case c.URL != nil:
		return *c.URL
	case c.Service != nil:
		path := ""
		if c.Service.Path != nil {
			path = *c.Service.Path
		}
		return fmt.Sprintf("Service %s/%s%s", c.Service.Namespace, c.Service.Name, path)
	}
	return "nothing"
}

// verifies checks leaf against caBundle as the API server does (an empty caBundle: the
// system's roots).
func verifies(caBundle []byte, leaf *x509.Certificate, intermediates *x509.CertPool) error {
	var roots *x509.CertPool
	if len(bytes.TrimSpace(caBundle)) > 0 {
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(caBundle) {
			return errors.New("the caBundle holds no PEM certificate")
		}
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, CurrentTime: time.Now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

// servingCert caches the parsed serving certificate by the file's content.
type servingCert struct {
	raw           []byte
	leaf          *x509.Certificate
	intermediates *x509.CertPool
}

func (c *servingCert) read(path string) (*x509.Certificate, *x509.CertPool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if c.leaf != nil && bytes.Equal(raw, c.raw) {
		return c.leaf, c.intermediates, nil
	}
	var certs []*x509.Certificate
	for rest := raw; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	intermediates := x509.NewCertPool()
	for _, cert := range certs[1:] {
		intermediates.AddCert(cert)
	}
	c.raw, c.leaf, c.intermediates = raw, certs[0], intermediates
	return c.leaf, c.intermediates, nil
}

// reasonOf is the Reason* of an error of the API server.
func reasonOf(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return ReasonForbidden
	case apierrors.IsUnauthorized(err):
		return ReasonUnauthorized
	case apierrors.IsNotFound(err):
		return ReasonNotFound
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return ReasonInvalid
	case apierrors.IsConflict(err):
		return ReasonConflict
	}
	return ReasonAPIError
}

// podOf is the Pod the registrar's Events are about, or nil when o does not name one.
func podOf(o Options) *corev1.Pod {
	if o.Pod.Name == "" || o.Pod.Namespace == "" {
		return nil
	}
	p := &corev1.Pod{}
	p.Namespace, p.Name, p.UID = o.Pod.Namespace, o.Pod.Name, types.UID(o.Pod.UID)
	return p
}
