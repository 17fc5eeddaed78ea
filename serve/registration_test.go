package serve

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// TestRegistrationCheck: a configuration holds this pod's webhooks when every webhook of the
// annotation is in it, calling the same Service (the API server's default port included), with a
// caBundle that verifies the serving certificate — with its intermediate, as cert-manager
// writes tls.crt — and not otherwise.
func TestRegistrationCheck(t *testing.T) {
	dir := t.TempDir()
	root := wt.NewCA(t, "root")
	leaf := root.Issue(t, "svc.ns.svc", x509.ExtKeyUsageServerAuth, "svc.ns.svc")
	wt.WriteKeyPair(t, dir, leaf)
	r := &Registrar{CertFile: filepath.Join(dir, "tls.crt"), Log: logr.Discard()}

	port := int32(443)
	path := "/validate-rbln-driver"
	hook := func(ca []byte, svc *admissionregistrationv1.ServiceReference) []admissionregistrationv1.ValidatingWebhook {
		return []admissionregistrationv1.ValidatingWebhook{{Name: "drivers.driverguard.rebellions.ai",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: svc, CABundle: ca}}}
	}
	want := hook(nil, &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: &path})
	stored := &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc", Path: &path, Port: &port}

	assert.Nil(t, r.check(want, hook(root.PEM, stored)), "registered, the API server's default port and all")
	for _, tc := range []struct {
		name   string
		live   []admissionregistrationv1.ValidatingWebhook
		reason string
		says   string
	}{
		{"none", nil, ReasonNotRegistered, "webhook drivers.driverguard.rebellions.ai is not in it"},
		{"another Service", hook(root.PEM, &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "other", Path: &path}), ReasonNotRegistered, "calls Service ns/other/validate-rbln-driver, not Service ns/svc/validate-rbln-driver"},
		{"another CA", hook(wt.NewCA(t, "other").PEM, stored), ReasonCANotTrusted, "does not verify this pod's serving certificate"},
		{"no CA (the API server's system roots)", hook(nil, stored), ReasonCANotTrusted, "does not verify"},
		{"not PEM", hook([]byte("the CA"), stored), ReasonCANotTrusted, "the caBundle holds no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := r.check(want, tc.live)
			require.NotNil(t, p)
			assert.Equal(t, tc.reason, p.reason)
			assert.Contains(t, p.message, tc.says)
		})
	}

	// tls.crt with its intermediate: the root in the caBundle verifies the chain.
	mid := wt.NewIntermediate(t, root, "intermediate")
	chained := mid.Issue(t, "svc.ns.svc", x509.ExtKeyUsageServerAuth, "svc.ns.svc")
	wt.WriteKeyPair(t, dir, chained)
	f, err := os.OpenFile(filepath.Join(dir, "tls.crt"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: mid.Cert.Raw}))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Nil(t, r.check(want, hook(root.PEM, stored)), "a chain through an intermediate")

	// An unreadable certificate is a reason of its own.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), []byte("garbage"), 0o600))
	p := r.check(want, hook(root.PEM, stored))
	require.NotNil(t, p)
	assert.Equal(t, ReasonCertificate, p.reason)
}

// TestRegistrationKeepsWhatItLastSaw: a sync that could not read a configuration keeps the
// last observation (a moment without the API server does not take every replica out of the
// Service), but a first sync that cannot read it is not ready; a configuration found missing
// is not registered, whatever came before.
func TestRegistrationKeepsWhatItLastSaw(t *testing.T) {
	r := &Registrar{Names: WebhookConfigurationNames{Validating: "v"}, Log: logr.Discard()}
	require.ErrorContains(t, r.Registered(nil), "not registered yet")
	gr := schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}
	timeout := outcome{reason: reasonOf(apierrors.NewTimeoutError("slow", 1)), err: errors.New("ValidatingWebhookConfiguration v: reading it: slow")}

	r.record(kindValidating, "v", timeout)
	require.ErrorContains(t, r.Registered(nil), "not registered (APIError)")

	hooks := []admissionregistrationv1.ValidatingWebhook{{Name: "a"}}
	r.record(kindValidating, "v", outcome{observed: true, want: hooks, live: hooks})
	require.NoError(t, r.Registered(nil))
	r.record(kindValidating, "v", timeout)
	assert.NoError(t, r.Registered(nil), "the last observation stands")

	r.record(kindValidating, "v", outcome{observed: true, want: hooks, live: hooks,
		reason: ReasonForbidden, err: apierrors.NewForbidden(gr, "v", errors.New("no update"))})
	assert.NoError(t, r.Registered(nil), "the webhooks are there, though the registrar may not update them")

	r.record(kindValidating, "v", outcome{observed: true, want: hooks, live: nil,
		reason: ReasonForbidden, err: apierrors.NewForbidden(gr, "v", errors.New("no update"))})
	err := r.Registered(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not registered (Forbidden)")
	assert.Contains(t, err.Error(), "grant serve's ServiceAccount get and update on it")

	r.record(kindValidating, "v", outcome{observed: true, want: hooks, live: hooks})
	r.record(kindValidating, "v", outcome{observed: true, reason: ReasonNotFound, err: errors.New("ValidatingWebhookConfiguration v does not exist (yet)")})
	assert.ErrorContains(t, r.Registered(nil), "not registered (NotFound)")
}
