package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
)

// AnnotationWebhooks holds, on a webhook configuration the chart installs, the JSON list of
// webhooks that `serve --register-webhooks` writes into the configuration once it serves.
// Helm writes only this annotation, never `webhooks`, so the API server calls no webhook before
// a pod can answer (whatever order Helm creates the release's objects in), and an upgrade
// leaves the registered webhooks alone.
const AnnotationWebhooks = "driverguard.rebellions.ai/webhooks"

// registrationResync is how often the registrar compares the configurations with their
// annotation even when no watch event arrives.
const registrationResync = time.Minute

// fieldManager is the manager of the fields the registrar writes.
const fieldManager = "driverguard-webhook"

// ValidatingWebhooksOf returns the webhooks cfg's annotation holds, each with the caBundle it
// has in cfg (injected by cert-controller or cert-manager) or, when it has none, ca.
func ValidatingWebhooksOf(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, ca []byte) ([]admissionregistrationv1.ValidatingWebhook, error) {
	return webhooksOf(cfg.Annotations, cfg.Webhooks, ca, func(w *admissionregistrationv1.ValidatingWebhook) (string, *admissionregistrationv1.WebhookClientConfig) {
		return w.Name, &w.ClientConfig
	})
}

// MutatingWebhooksOf is ValidatingWebhooksOf for a mutating webhook configuration.
func MutatingWebhooksOf(cfg *admissionregistrationv1.MutatingWebhookConfiguration, ca []byte) ([]admissionregistrationv1.MutatingWebhook, error) {
	return webhooksOf(cfg.Annotations, cfg.Webhooks, ca, func(w *admissionregistrationv1.MutatingWebhook) (string, *admissionregistrationv1.WebhookClientConfig) {
		return w.Name, &w.ClientConfig
	})
}

func webhooksOf[W any](annotations map[string]string, live []W, ca []byte, parts func(*W) (string, *admissionregistrationv1.WebhookClientConfig)) ([]W, error) {
	text, ok := annotations[AnnotationWebhooks]
	if !ok {
		return nil, fmt.Errorf("no annotation %s: install the configuration with driverguard's chart, which writes the webhooks there", AnnotationWebhooks)
	}
	var want []W
	if err := json.Unmarshal([]byte(text), &want); err != nil {
		return nil, fmt.Errorf("annotation %s is not a JSON list of webhooks: %w", AnnotationWebhooks, err)
	}
	injected := map[string][]byte{}
	for i := range live {
		name, cc := parts(&live[i])
		if len(cc.CABundle) > 0 {
			injected[name] = cc.CABundle
		}
	}
	for i := range want {
		name, cc := parts(&want[i])
		if name == "" {
			return nil, fmt.Errorf("annotation %s: webhook %d has no name", AnnotationWebhooks, i)
		}
		switch {
		case len(injected[name]) > 0:
			cc.CABundle = injected[name]
		case len(cc.CABundle) == 0:
			cc.CABundle = ca
		}
	}
	return want, nil
}

// Registrar keeps the webhooks of the named configurations equal to what their annotation
// holds (AnnotationWebhooks): it writes them once the server serves, and again whenever they
// change or are removed (a `helm upgrade --force`, a rollback, an upgrade from a chart that
// owned them, a hand edit). Every replica runs it: they all write the same content, so they
// agree. A configuration that does not exist is waited for, not created: Helm owns the
// objects, and `helm uninstall` deletes them with nothing left to fail closed.
//
// It also says whether this pod's webhooks are registered — [Registrar.Registered], serve's
// readiness check — with the metrics driverguard_webhook_registered and
// driverguard_webhook_registration_failures_total, the log, and Events on Pod.
type Registrar struct {
	Client kubernetes.Interface
	// Names of the configurations; either may be empty.
	Names WebhookConfigurationNames
	// CAFile holds the CA of the serving certificate (ca.crt of the mounted Secret), used for
	// webhooks that no injector has given a caBundle yet. A missing file means none.
	CAFile string
	// CertFile is this pod's serving certificate (tls.crt, with any intermediates): a webhook
	// counts as registered only when its caBundle verifies it, as the API server will. Empty:
	// the caBundle is not checked.
	CertFile string
	Log      logr.Logger
	// Events, when set, records an Event on Pod (only its namespace, name and UID are read)
	// whenever a configuration's registration fails or comes back.
	Events events.EventRecorder
	Pod    *corev1.Pod
	// Serving, when set, is closed once the server serves: Run writes nothing before (the API
	// server would call a webhook that does not answer yet), but checks with a dry run that it
	// may, so a pod that will never register says why from the start — even one whose server
	// never starts (with --cert-rotation, the CA cannot be injected without the same right).
	Serving <-chan struct{}

	last map[string]written // used by Run's goroutine only

	mu        sync.Mutex
	status    map[string]*registration // by kind/name
	announced string                   // what the last Event said, in short
	cert      servingCert              // used by Sync's caller only
}

// Run registers the webhooks and keeps them registered until ctx ends.
func (r *Registrar) Run(ctx context.Context) error {
	trigger := make(chan struct{}, 1)
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default:
		}
	}
	if r.Names.Validating != "" {
		go r.watch(ctx, r.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations(), r.Names.Validating, poke)
	}
	if r.Names.Mutating != "" {
		go r.watch(ctx, r.Client.AdmissionregistrationV1().MutatingWebhookConfigurations(), r.Names.Mutating, poke)
	}
	go r.watchFiles(ctx, poke)
	serves := func() bool {
		if r.Serving == nil {
			return true
		}
		select {
		case <-r.Serving:
			return true
		default:
			return false
		}
	}
	backoff := time.Second
	for {
		serving := serves()
		var err error
		if serving {
			err = r.Sync(ctx)
		} else {
			err = r.probe(ctx)
		}
		wait := registrationResync
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			r.Log.Error(err, "registering the webhooks; retrying", "in", backoff)
			wait, backoff = backoff, min(backoff*2, 30*time.Second)
		} else {
			backoff = time.Second
		}
		var started <-chan struct{} // nil (never ready) once serving
		if !serving {
			started = r.Serving
		}
		select {
		case <-ctx.Done():
			return nil
		case <-trigger:
		case <-started:
			backoff = time.Second
		case <-time.After(wait):
		}
	}
}

// certPoll is how often the registrar reads the serving certificate and the CA file: the
// kubelet replaces a rotated Secret's files without any event the registrar could watch.
const certPoll = 5 * time.Second

// watchFiles pokes when the serving certificate or the CA file changes, until ctx ends.
func (r *Registrar) watchFiles(ctx context.Context, poke func()) {
	read := func() []byte {
		var out []byte
		for _, f := range []string{r.CertFile, r.CAFile} {
			if f != "" {
				b, _ := os.ReadFile(f) // a missing file is a content too
				out = append(append(out, b...), 0)
			}
		}
		return out
	}
	last := read()
	tick := time.NewTicker(certPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if now := read(); !bytes.Equal(now, last) {
			last = now
			poke()
		}
	}
}

// watcher is what watch needs of a typed client of webhook configurations.
type watcher interface {
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// watch pokes on every event of the named object, rewatching until ctx ends.
func (r *Registrar) watch(ctx context.Context, c watcher, name string, poke func()) {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Second):
				continue
			}
		}
		for range w.ResultChan() {
			poke()
		}
		w.Stop()
		poke() // a watch ends after a while; what happened meanwhile is read again
	}
}

// Sync writes the webhooks of both configurations once, when they differ from the annotation,
// and records whether this pod's webhooks are registered (Registered).
func (r *Registrar) Sync(ctx context.Context) error {
	readers, err := r.readers(ctx)
	if err != nil {
		for _, k := range r.configurations() {
			r.record(k.kind, k.name, outcome{reason: ReasonCertificate, err: err})
		}
		r.announce()
		return err
	}
	var errs []error
	for _, k := range r.configurations() {
		o := r.sync(ctx, k.kind, k.name, readers[k])
		r.record(k.kind, k.name, o)
		errs = append(errs, o.err)
	}
	r.announce()
	return errors.Join(errs...)
}

// probe checks, before the server serves, that the registrar may write the configurations: a
// dry run of the write it will make. A refusal (no right to update them, webhooks the API
// server rejects, a broken annotation) is recorded as a sync's failure would be; otherwise the
// configuration waits for the server. A configuration that does not exist yet is waited for
// silently (Helm 3 creates the webhook configurations after the Deployment).
func (r *Registrar) probe(ctx context.Context) error {
	readers, err := r.readers(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range r.configurations() {
		st, err := readers[k]()
		var o outcome
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			o = outcome{reason: reasonOf(err), err: fmt.Errorf("%s %s: reading it: %w", k.kind, k.name, err)}
		case st.wantErr != nil:
			o = outcome{reason: ReasonBadAnnotation, err: fmt.Errorf("%s %s: %w", k.kind, k.name, st.wantErr)}
		default:
			if err := st.tryWrite(); err != nil {
				o = outcome{reason: reasonOf(err), err: fmt.Errorf("%s %s: writing its webhooks (tried as a dry run before serving): %w", k.kind, k.name, err)}
			}
		}
		if o.err == nil {
			r.forget(k.kind, k.name)
			continue
		}
		r.record(k.kind, k.name, o)
		errs = append(errs, o.err)
	}
	r.announce()
	return errors.Join(errs...)
}

// readers read each configuration, with the CA file's CA for webhooks without one.
func (r *Registrar) readers(ctx context.Context) (map[configKey]func() (*configState, error), error) {
	ca, err := os.ReadFile(r.CAFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading the CA %s: %w", r.CAFile, err)
	}
	out := map[configKey]func() (*configState, error){}
	if n := r.Names.Validating; n != "" {
		out[configKey{kindValidating, n}] = configReader(ctx, n, ca,
			r.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations(), ValidatingWebhooksOf,
			func(c *admissionregistrationv1.ValidatingWebhookConfiguration) *[]admissionregistrationv1.ValidatingWebhook {
				return &c.Webhooks
			})
	}
	if n := r.Names.Mutating; n != "" {
		out[configKey{kindMutating, n}] = configReader(ctx, n, ca,
			r.Client.AdmissionregistrationV1().MutatingWebhookConfigurations(), MutatingWebhooksOf,
			func(c *admissionregistrationv1.MutatingWebhookConfiguration) *[]admissionregistrationv1.MutatingWebhook {
				return &c.Webhooks
			})
	}
	return out, nil
}

const (
	kindValidating = "ValidatingWebhookConfiguration"
	kindMutating   = "MutatingWebhookConfiguration"
)

type configKey struct{ kind, name string }

func (r *Registrar) configurations() []configKey {
	var out []configKey
	if n := r.Names.Validating; n != "" {
		out = append(out, configKey{kindValidating, n})
	}
	if n := r.Names.Mutating; n != "" {
		out = append(out, configKey{kindMutating, n})
	}
	return out
}

// configClient is what the registrar needs of a typed client of webhook configurations.
type configClient[C any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*C, error)
	Update(ctx context.Context, cfg *C, opts metav1.UpdateOptions) (*C, error)
}

// configState is one read of a configuration.
type configState struct {
	want  any // the webhooks its annotation holds (nil when wantErr is set)
	live  any // the webhooks it holds
	write func() (stored any, err error)
	// tryWrite writes want as a dry run: the API server answers as to write, and stores nothing.
	tryWrite func() error
	// wantErr: the annotation is missing or not a list of webhooks.
	wantErr error
}

// configReader reads configuration name for sync.
func configReader[C, W any](ctx context.Context, name string, ca []byte, c configClient[C], of func(*C, []byte) ([]W, error), webhooks func(*C) *[]W) func() (*configState, error) {
	return func() (*configState, error) {
		cfg, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		want, err := of(cfg, ca)
		st := &configState{live: *webhooks(cfg), wantErr: err}
		if err != nil {
			return st, nil
		}
		st.want = want
		st.write = func() (any, error) {
			*webhooks(cfg) = want
			out, err := c.Update(ctx, cfg, metav1.UpdateOptions{FieldManager: fieldManager})
			if err != nil {
				return nil, err
			}
			return *webhooks(out), nil
		}
		st.tryWrite = func() error {
			*webhooks(cfg) = want
			_, err := c.Update(ctx, cfg, metav1.UpdateOptions{FieldManager: fieldManager, DryRun: []string{metav1.DryRunAll}})
			return err
		}
		return st, nil
	}
}

// written is what the registrar last wrote to a configuration and what the API server stored
// (with its defaults), as JSON: a configuration that still holds what was stored for the same
// wish is not written again.
type written struct{ want, stored string }

// outcome is what one sync of a configuration found.
type outcome struct {
	// observed: the configuration was read (or found missing); want and live are then the
	// webhooks its annotation holds (nil when unreadable) and those it holds now.
	observed   bool
	want, live any
	// err is why the sync failed, reason its kind (Reason*).
	err    error
	reason string
}

// sync reads a configuration (read returns its state) and writes it when it differs, again on
// a write conflict.
func (r *Registrar) sync(ctx context.Context, kind, name string, read func() (*configState, error)) outcome {
	key := kind + "/" + name
	for range 5 {
		st, err := read()
		if err != nil {
			if apierrors.IsNotFound(err) {
				return outcome{observed: true, reason: ReasonNotFound,
					err: fmt.Errorf("%s %s does not exist (yet): the chart creates it; waiting", kind, name)}
			}
			return outcome{reason: reasonOf(err), err: fmt.Errorf("%s %s: reading it: %w", kind, name, err)}
		}
		if st.wantErr != nil {
			return outcome{observed: true, live: st.live, reason: ReasonBadAnnotation, err: fmt.Errorf("%s %s: %w", kind, name, st.wantErr)}
		}
		wantJSON, liveJSON := jsonOf(st.want), jsonOf(st.live)
		last := r.memo()[key]
		if wantJSON == liveJSON || (last.want == wantJSON && last.stored == liveJSON) {
			return outcome{observed: true, want: st.want, live: st.live}
		}
		stored, err := st.write()
		if err == nil {
			r.memo()[key] = written{want: wantJSON, stored: jsonOf(stored)}
			r.Log.Info("wrote the webhooks of the annotation into the configuration", "kind", kind, "name", name)
			return outcome{observed: true, want: st.want, live: stored}
		}
		if apierrors.IsConflict(err) && ctx.Err() == nil {
			continue
		}
		return outcome{observed: true, want: st.want, live: st.live, reason: reasonOf(err),
			err: fmt.Errorf("%s %s: writing its webhooks: %w", kind, name, err)}
	}
	return outcome{reason: ReasonConflict, err: fmt.Errorf("%s %s: conflicting writes; retrying", kind, name)}
}

func (r *Registrar) memo() map[string]written {
	if r.last == nil {
		r.last = map[string]written{}
	}
	return r.last
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v) // webhook types always marshal
	return string(b)
}

// newRegistrar is the registrar of o, or nil when o does not register.
func newRegistrar(cfg *rest.Config, o Options, log logr.Logger) (*Registrar, error) {
	if !o.RegisterWebhooks {
		return nil, nil
	}
	if o.WebhookConfigurations.Validating == "" && o.WebhookConfigurations.Mutating == "" {
		return nil, errors.New("registering webhooks needs the names of the webhook configurations")
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("a client to register the webhooks: %w", err)
	}
	caFile := o.CAFile
	if caFile == "" {
		caFile = filepath.Join(o.CertDir, "ca.crt")
	}
	return &Registrar{Client: cs, Names: o.WebhookConfigurations, CAFile: caFile,
		CertFile: filepath.Join(o.CertDir, orDefault(o.CertName, "tls.crt")), Log: log, Pod: podOf(o)}, nil
}
