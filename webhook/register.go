package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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
type Registrar struct {
	Client kubernetes.Interface
	// Names of the configurations; either may be empty.
	Names WebhookConfigurationNames
	// CAFile holds the CA of the serving certificate (ca.crt of the mounted Secret), used for
	// webhooks that no injector has given a caBundle yet. A missing file means none.
	CAFile string
	Log    logr.Logger

	last map[string]written // used by Run's goroutine only
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
	backoff := time.Second
	for {
		err := r.Sync(ctx)
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
		select {
		case <-ctx.Done():
			return nil
		case <-trigger:
		case <-time.After(wait):
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

// Sync writes the webhooks of both configurations once, when they differ from the annotation.
func (r *Registrar) Sync(ctx context.Context) error {
	ca, err := os.ReadFile(r.CAFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading the CA: %w", err)
	}
	var errs []error
	if n := r.Names.Validating; n != "" {
		errs = append(errs, r.sync(ctx, "ValidatingWebhookConfiguration", n, configReader(ctx, n, ca,
			r.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations(), ValidatingWebhooksOf,
			func(c *admissionregistrationv1.ValidatingWebhookConfiguration) *[]admissionregistrationv1.ValidatingWebhook {
				return &c.Webhooks
			})))
	}
	if n := r.Names.Mutating; n != "" {
		errs = append(errs, r.sync(ctx, "MutatingWebhookConfiguration", n, configReader(ctx, n, ca,
			r.Client.AdmissionregistrationV1().MutatingWebhookConfigurations(), MutatingWebhooksOf,
			func(c *admissionregistrationv1.MutatingWebhookConfiguration) *[]admissionregistrationv1.MutatingWebhook {
				return &c.Webhooks
			})))
	}
	return errors.Join(errs...)
}

// configClient is what the registrar needs of a typed client of webhook configurations.
type configClient[C any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*C, error)
	Update(ctx context.Context, cfg *C, opts metav1.UpdateOptions) (*C, error)
}

// configReader reads configuration name for sync: the webhooks its annotation wants (of), the
// webhooks it holds (webhooks), and the write of the wanted ones.
func configReader[C, W any](ctx context.Context, name string, ca []byte, c configClient[C], of func(*C, []byte) ([]W, error), webhooks func(*C) *[]W) func() (any, any, func(any) (any, error), error) {
	return func() (any, any, func(any) (any, error), error) {
		cfg, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, nil, nil, err
		}
		want, err := of(cfg, ca)
		live := *webhooks(cfg)
		return want, live, func(any) (any, error) {
			*webhooks(cfg) = want
			out, err := c.Update(ctx, cfg, metav1.UpdateOptions{FieldManager: fieldManager})
			if err != nil {
				return nil, err
			}
			return *webhooks(out), nil
		}, err
	}
}

// written is what the registrar last wrote to a configuration and what the API server stored
// (with its defaults), as JSON: a configuration that still holds what was stored for the same
// wish is not written again.
type written struct{ want, stored string }

// sync reads a configuration (read returns the webhooks wanted, the webhooks it holds and the
// write of the wanted ones) and writes it when it differs, again on a write conflict.
func (r *Registrar) sync(ctx context.Context, kind, name string, read func() (want, live any, write func(any) (any, error), err error)) error {
	key := kind + "/" + name
	for range 5 {
		want, live, write, err := read()
		if err == nil {
			wantJSON, liveJSON := jsonOf(want), jsonOf(live)
			last := r.memo()[key]
			if wantJSON == liveJSON || (last.want == wantJSON && last.stored == liveJSON) {
				return nil
			}
			var stored any
			if stored, err = write(want); err == nil {
				r.memo()[key] = written{want: wantJSON, stored: jsonOf(stored)}
				r.Log.Info("registered the webhooks", "kind", kind, "name", name)
				return nil
			}
		}
		switch {
		case apierrors.IsConflict(err) && ctx.Err() == nil:
			continue
		case apierrors.IsNotFound(err):
			return fmt.Errorf("%s %s does not exist (yet): the chart creates it; waiting", kind, name)
		default:
			return fmt.Errorf("%s %s: %w", kind, name, err)
		}
	}
	return fmt.Errorf("%s %s: conflicting writes; retrying", kind, name)
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
func newRegistrar(cfg *rest.Config, o ServerOptions, log logr.Logger) (*Registrar, error) {
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
		caFile = o.CertDir + "/ca.crt"
	}
	return &Registrar{Client: cs, Names: o.WebhookConfigurations, CAFile: caFile, Log: log}, nil
}
