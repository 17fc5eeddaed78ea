package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// TestRegistrar: the registrar writes the webhooks a configuration's annotation holds, with the
// CA file; keeps a caBundle an injector wrote; writes nothing when nothing changed (the API
// server's defaults included); writes them again when they are removed by hand or the
// annotation changes (an upgrade); and waits for a configuration that does not exist yet
// instead of creating it.
func TestRegistrar(t *testing.T) {
	c, _ := newClient(t)
	cs, err := kubernetes.NewForConfig(suite.plane.Config)
	require.NoError(t, err)
	const name = "registrar-e2e"
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(caFile, []byte("the CA"), 0o600))
	sideEffects := admissionregistrationv1.SideEffectClassNone
	annotation := func(webhookName string, timeout int32) map[string]string {
		return map[string]string{webhook.AnnotationWebhooks: string(wt.MustJSON([]map[string]any{{
			"name": webhookName, "admissionReviewVersions": []string{"v1"}, "sideEffects": sideEffects, "timeoutSeconds": timeout,
			"rules": inertRules, "clientConfig": map[string]any{"service": map[string]any{"namespace": "x", "name": "y"}},
		}}))}
	}
	r := &webhook.Registrar{Client: cs, Names: webhook.WebhookConfigurationNames{Validating: name, Mutating: name}, CAFile: caFile, Log: logr.Discard()}

	// No configuration yet: an error that says so; nothing is created.
	err = r.Sync(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not exist (yet)")
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	assert.Error(t, c.Get(t.Context(), client.ObjectKey{Name: name}, &v))

	create(t, c, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotation("inert.e2e.invalid", 5)}})
	create(t, c, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotation("inert.e2e.invalid", 5)}})
	require.NoError(t, r.Sync(t.Context()))
	var m admissionregistrationv1.MutatingWebhookConfiguration
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, &v))
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, &m))
	require.Len(t, v.Webhooks, 1)
	require.Len(t, m.Webhooks, 1)
	assert.Equal(t, []byte("the CA"), v.Webhooks[0].ClientConfig.CABundle)
	assert.Equal(t, []byte("the CA"), m.Webhooks[0].ClientConfig.CABundle)

	// Quiet: the API server's defaults are no difference — ten passes, no write.
	versions := func() string {
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, &v))
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, &m))
		return v.ResourceVersion + "/" + m.ResourceVersion
	}
	before := versions()
	for range 10 {
		require.NoError(t, r.Sync(t.Context()))
	}
	assert.Equal(t, before, versions(), "a steady configuration is not written")
	// A second replica (no memory of its own writes) writes nothing either.
	require.NoError(t, (&webhook.Registrar{Client: cs, Names: r.Names, CAFile: caFile, Log: logr.Discard()}).Sync(t.Context()))
	assert.Equal(t, before, versions(), "another replica finds nothing to write")

	// An injected caBundle is kept.
	v.Webhooks[0].ClientConfig.CABundle = []byte("injected")
	require.NoError(t, c.Update(t.Context(), &v))
	require.NoError(t, r.Sync(t.Context()))
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, &v))
	assert.Equal(t, []byte("injected"), v.Webhooks[0].ClientConfig.CABundle)

	// Running: webhooks removed by hand come back; an upgraded annotation is applied.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	v.Webhooks = nil
	require.NoError(t, c.Update(t.Context(), &v))
	eventually(t, 30*time.Second, func() error {
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &v); err != nil {
			return err
		}
		if len(v.Webhooks) != 1 {
			return fmt.Errorf("%d webhooks", len(v.Webhooks))
		}
		return nil
	})
	assert.Equal(t, []byte("the CA"), v.Webhooks[0].ClientConfig.CABundle, "removed with its caBundle: the CA file's again")
	m.Annotations = annotation("inert2.e2e.invalid", 7)
	require.NoError(t, c.Update(t.Context(), &m))
	eventually(t, 30*time.Second, func() error {
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &m); err != nil {
			return err
		}
		if len(m.Webhooks) != 1 || m.Webhooks[0].Name != "inert2.e2e.invalid" || *m.Webhooks[0].TimeoutSeconds != 7 {
			return fmt.Errorf("webhooks %v", m.Webhooks)
		}
		return nil
	})
}
