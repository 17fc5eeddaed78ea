package e2e

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/driverguard/driverguard/cmd/driverguard/app"
	"github.com/driverguard/driverguard/serve"
	"github.com/driverguard/driverguard/test/controlplane"
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
		return map[string]string{serve.AnnotationWebhooks: string(wt.MustJSON([]map[string]any{{
			"name": webhookName, "admissionReviewVersions": []string{"v1"}, "sideEffects": sideEffects, "timeoutSeconds": timeout,
			"rules": inertRules, "clientConfig": map[string]any{"service": map[string]any{"namespace": "x", "name": "y"}},
		}}))}
	}
	r := &serve.Registrar{Client: cs, Names: serve.WebhookConfigurationNames{Validating: name, Mutating: name}, CAFile: caFile, Log: logr.Discard()}

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
	require.NoError(t, (&serve.Registrar{Client: cs, Names: r.Names, CAFile: caFile, Log: logr.Discard()}).Sync(t.Context()))
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

// registration is a release's webhook set-up for a serve run as its ServiceAccount: a
// namespace, the two webhook configurations (inert webhooks in their annotation, none
// registered), the Pod serve's Events are about, and RBAC to read what serve reads and write
// Events — but not to update the configurations until grant is created.
type registration struct {
	c                   client.Client
	ns, name, user      string
	pod                 *corev1.Pod
	kubeconfig, certDir string
	grant               *rbacv1.ClusterRoleBinding
	health, metrics     int
	logs                controlplane.LogBuffer
}

func newRegistration(t *testing.T, c client.Client, ns string, nsRules ...rbacv1.PolicyRule) *registration {
	t.Helper()
	f := &registration{c: c, ns: ns, name: ns + "-driverguard-webhook"}
	f.user = "system:serviceaccount:" + ns + ":" + f.name
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	hooks := string(wt.MustJSON([]map[string]any{{"name": "inert." + ns + ".invalid", "admissionReviewVersions": []string{"v1"},
		"sideEffects": "None", "rules": inertRules, "clientConfig": map[string]any{"service": map[string]any{"namespace": ns, "name": f.name}}}}))
	create(t, c, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: f.name,
		Annotations: map[string]string{serve.AnnotationWebhooks: hooks}}})
	create(t, c, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: f.name,
		Annotations: map[string]string{serve.AnnotationWebhooks: hooks}}})
	// The pod serve runs in (its Events land on it; the chart passes the downward API).
	f.pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: f.name + "-0"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "webhook", Image: "driverguard.invalid/driverguard"}}}}
	create(t, c, f.pod)
	t.Setenv("POD_NAMESPACE", ns)
	t.Setenv("POD_NAME", f.pod.Name)
	t.Setenv("POD_UID", string(f.pod.UID))

	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: f.user}}
	create(t, c, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: f.name + "-read"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"rebellions.ai"}, Resources: []string{"rblndrivers", "rblnclusterpolicies"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, Verbs: []string{"get", "list", "watch"}},
	}})
	create(t, c, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: f.name + "-read"}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: f.name + "-read"}})
	create(t, c, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: f.name}, Rules: append([]rbacv1.PolicyRule{
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}}}, nsRules...)})
	create(t, c, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: f.name}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: f.name}})
	updater := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: f.name + "-update"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"},
			ResourceNames: []string{f.name}, Verbs: []string{"update", "patch"}}}}
	create(t, c, updater)
	f.grant = &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: f.name + "-update"}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: updater.Name}}

	dir := t.TempDir()
	f.kubeconfig, f.certDir = filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "certs")
	if err := controlplane.WriteKubeconfig(suite.env, envtest.User{Name: f.user, Groups: []string{"system:authenticated"}}, f.kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return f
}

// serve runs `driverguard serve --register-webhooks` (and args) as the user, in-process, until
// the test ends.
func (f *registration) serve(t *testing.T, args ...string) {
	t.Helper()
	f.health, f.metrics = controlplane.FreePort(t, nil), controlplane.FreePort(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	args = append([]string{"serve",
		"--kubeconfig", f.kubeconfig, "--host", "127.0.0.1", "--port", strconv.Itoa(controlplane.FreePort(t, nil)), "--cert-dir", f.certDir,
		"--health-addr", "127.0.0.1:" + strconv.Itoa(f.health), "--metrics-addr", "127.0.0.1:" + strconv.Itoa(f.metrics),
		"--validating-webhook-configuration", f.name, "--mutating-webhook-configuration", f.name, "--register-webhooks",
		"--shutdown-delay", "0s", "--log-format", "text"}, args...)
	go func() {
		done <- app.Run(ctx, app.Streams{In: bytes.NewReader(nil), Out: io.Discard, Err: &f.logs}, args)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited with %d; logs:\n%s", code, f.logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s of cancellation")
		}
		if t.Failed() {
			t.Logf("serve's log:\n%s", f.logs.Tail(40))
		}
	})
}

func (f *registration) get(path string) (int, string) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", f.health, path))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// notReady waits until /readyz fails because the webhooks are not registered, saying why; with
// serving, the server must be serving and the cluster view synced meanwhile.
func (f *registration) notReady(t *testing.T, why string, serving bool) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		if serving {
			for _, check := range []string{"webhook-server", "cluster-view"} {
				if code, body := f.get("/readyz/" + check); code != http.StatusOK {
					return fmt.Errorf("%s: HTTP %d %s", check, code, body)
				}
			}
		}
		if code, _ := f.get("/readyz"); code == http.StatusOK {
			return fmt.Errorf("/readyz: HTTP 200 while the webhooks are not registered (%s)", why)
		}
		if code, body := f.get("/readyz/webhook-registration"); code == http.StatusOK || !strings.Contains(body, why) {
			return fmt.Errorf("/readyz/webhook-registration: HTTP %d %q, want it to say %q", code, body, why)
		}
		return nil
	})
}

func (f *registration) ready(t *testing.T) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		if code, body := f.get("/readyz"); code != http.StatusOK {
			return fmt.Errorf("/readyz: HTTP %d %s", code, body)
		}
		return nil
	})
}

// registered is driverguard_webhook_registered of configuration kind.
func (f *registration) registered(t *testing.T, kind string) float64 {
	t.Helper()
	return metricValue(t, f.metrics, "driverguard_webhook_registered", map[string]string{"kind": kind, "name": f.name})
}

// registeredIs waits until driverguard_webhook_registered of configuration kind is want: the
// registrar syncs the two configurations one after the other, so /readyz may already say why
// one is not registered while the other's sync is still on its way.
func (f *registration) registeredIs(t *testing.T, kind string, want float64, msgAndArgs ...any) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		if got := f.registered(t, kind); got != want {
			return fmt.Errorf("driverguard_webhook_registered{kind=%q} = %v, want %v %v", kind, got, want, msgAndArgs)
		}
		return nil
	})
}

func (f *registration) failures(t *testing.T, kind, reason string) float64 {
	t.Helper()
	return metricValue(t, f.metrics, "driverguard_webhook_registration_failures_total", map[string]string{"kind": kind, "name": f.name, "reason": reason})
}

// event waits for an Event of reason on the pod whose note says says.
func (f *registration) event(t *testing.T, reason, says string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		list := &eventsv1.EventList{}
		if err := f.c.List(t.Context(), list, client.InNamespace(f.ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Pod" && e.Regarding.Name == f.pod.Name && e.Regarding.UID == f.pod.UID && e.Reason == reason && strings.Contains(e.Note, says) {
				return nil
			}
		}
		return fmt.Errorf("no %s Event on Pod %s saying %q among %d", reason, f.pod.Name, says, len(list.Items))
	})
}

func (f *registration) webhooks(t *testing.T) (v admissionregistrationv1.ValidatingWebhookConfiguration, m admissionregistrationv1.MutatingWebhookConfiguration) {
	t.Helper()
	require.NoError(t, f.c.Get(t.Context(), client.ObjectKey{Name: f.name}, &v))
	require.NoError(t, f.c.Get(t.Context(), client.ObjectKey{Name: f.name}, &m))
	return v, m
}

// TestServeReadyOnlyWhenRegistered (#30): `serve --register-webhooks` run as a ServiceAccount
// that may read but not update its webhook configurations was Ready (/readyz 200) with
// `webhooks` null: every RBLNDriver write went unjudged, and nothing said so. Now it is Ready
// only while its webhooks are in both configurations, calling its Service, with a caBundle
// that verifies its serving certificate; a metric and an Event on its Pod say why not. Granted
// the permission it registers them and becomes Ready; a configuration emptied by hand that it
// may not rewrite, or a certificate rotated under a caBundle that no longer verifies it, take
// readiness away again.
func TestServeReadyOnlyWhenRegistered(t *testing.T) {
	c, _ := newClient(t)
	f := newRegistration(t, c, "ready-e2e")
	dns := f.name + "." + f.ns + ".svc"
	ca := wt.NewCA(t, "ready-e2e-ca")
	wt.WriteKeyPair(t, f.certDir, ca.Issue(t, dns, x509.ExtKeyUsageServerAuth, dns))
	require.NoError(t, os.WriteFile(filepath.Join(f.certDir, "ca.crt"), ca.PEM, 0o600))
	f.serve(t)

	// No permission to update the configurations: serving, synced, and not Ready.
	f.notReady(t, "forbidden", true)
	v, m := f.webhooks(t)
	assert.Empty(t, v.Webhooks)
	assert.Empty(t, m.Webhooks)
	f.registeredIs(t, "ValidatingWebhookConfiguration", 0)
	f.registeredIs(t, "MutatingWebhookConfiguration", 0)
	assert.Positive(t, f.failures(t, "ValidatingWebhookConfiguration", "Forbidden"))
	f.event(t, "WebhookRegistrationFailed", "forbidden")
	assert.Contains(t, f.logs.String(), "not ready")

	// Granted: registered with the CA, Ready.
	create(t, c, f.grant)
	f.ready(t)
	v, m = f.webhooks(t)
	require.Len(t, v.Webhooks, 1)
	require.Len(t, m.Webhooks, 1)
	assert.Equal(t, ca.PEM, v.Webhooks[0].ClientConfig.CABundle)
	assert.Equal(t, ca.PEM, m.Webhooks[0].ClientConfig.CABundle)
	f.registeredIs(t, "ValidatingWebhookConfiguration", 1)
	f.registeredIs(t, "MutatingWebhookConfiguration", 1)
	f.event(t, "WebhooksRegistered", f.name)

	// The permission taken away, then the configuration emptied by hand: not Ready.
	deleteAndWait(t, c, f.grant)
	v.Webhooks = nil
	require.NoError(t, c.Update(t.Context(), &v))
	f.notReady(t, "forbidden", true)
	f.registeredIs(t, "ValidatingWebhookConfiguration", 0)
	f.registeredIs(t, "MutatingWebhookConfiguration", 1, "the mutating configuration still holds its webhook")
	f.grant.ResourceVersion, f.grant.UID = "", ""
	create(t, c, f.grant)
	f.ready(t)

	// A certificate rotated under the configurations (a new CA, mounted as the kubelet would):
	// their caBundle no longer verifies it, so the API server could not call this pod. Once
	// the injector (cert-controller, cert-manager) writes the new CA, Ready again.
	rotated := wt.NewCA(t, "ready-e2e-ca-2")
	wt.WriteKeyPair(t, f.certDir, rotated.Issue(t, dns, x509.ExtKeyUsageServerAuth, dns))
	require.NoError(t, os.WriteFile(filepath.Join(f.certDir, "ca.crt"), rotated.PEM, 0o600))
	f.notReady(t, "does not verify this pod's serving certificate", true)
	f.registeredIs(t, "ValidatingWebhookConfiguration", 0)
	assert.Positive(t, f.failures(t, "ValidatingWebhookConfiguration", "CANotTrusted"))
	f.event(t, "WebhookRegistrationFailed", "does not verify this pod's serving certificate")
	v, m = f.webhooks(t)
	v.Webhooks[0].ClientConfig.CABundle = rotated.PEM
	m.Webhooks[0].ClientConfig.CABundle = rotated.PEM
	require.NoError(t, c.Update(t.Context(), &v))
	require.NoError(t, c.Update(t.Context(), &m))
	f.ready(t)
}

// TestServeSaysWhyBeforeItServes (#30): with --cert-rotation (the chart's default) and no
// permission to update the webhook configurations, the CA cannot be injected either, so the
// server never starts — and serve used to say nothing of its own while it was never ready
// (cert-controller gave up after about 17 minutes and the pod restarted). Before it serves,
// the registrar tries its write as a dry run: /readyz, the metric and an Event say that it may
// not update the configurations. Granted, it starts, registers and becomes ready.
func TestServeSaysWhyBeforeItServes(t *testing.T) {
	c, _ := newClient(t)
	f := newRegistration(t, c, "rotation-e2e",
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "update"}})
	secret := f.name + "-cert"
	create(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: secret}})
	// The kubelet mounts the Secret once cert-controller filled it.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			var s corev1.Secret
			if c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: secret}, &s) == nil && len(s.Data["tls.crt"]) > 0 {
				for _, k := range []string{"ca.crt", "tls.key", "tls.crt"} {
					_ = os.WriteFile(filepath.Join(f.certDir, k), s.Data[k], 0o600)
				}
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	f.serve(t, "--cert-rotation", "--namespace", f.ns, "--cert-secret", secret, "--service-name", f.name)

	f.notReady(t, "tried as a dry run before serving", false)
	f.notReady(t, "forbidden", false)
	assert.NotEqual(t, http.StatusOK, func() int { code, _ := f.get("/readyz/webhook-server"); return code }(), "the server does not start without its CA injected")
	assert.Positive(t, f.failures(t, "ValidatingWebhookConfiguration", "Forbidden"))
	f.event(t, "WebhookRegistrationFailed", "forbidden")
	v, _ := f.webhooks(t)
	assert.Empty(t, v.Webhooks, "nothing registered before serving")

	create(t, c, f.grant)
	f.ready(t)
	v, m := f.webhooks(t)
	require.Len(t, v.Webhooks, 1)
	require.Len(t, m.Webhooks, 1)
	f.event(t, "WebhooksRegistered", f.name)
}

// metricValue reads the value of the sample of metric with these labels from a metrics
// endpoint on 127.0.0.1:port (0 when there is none).
func metricValue(t *testing.T, port int, metric string, labels map[string]string) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	f, ok := families[metric]
	if !ok {
		return 0
	}
	for _, m := range f.GetMetric() {
		matched := 0
		for _, l := range m.GetLabel() {
			if want, ok := labels[l.GetName()]; ok && want == l.GetValue() {
				matched++
			}
		}
		if matched != len(labels) {
			continue
		}
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestEveryReplicaRegisters (#30): with the audit's leader election (the chart's default),
// every replica registers the webhooks and becomes ready, not the leader alone: a follower
// whose readiness waited for a registrar that only the leader ran would never be ready, and a
// rollout (maxUnavailable 0) would wait forever for its new pod.
func TestEveryReplicaRegisters(t *testing.T) {
	c, _ := newClient(t)
	const ns, name = "replicas-e2e", "replicas-e2e-driverguard-webhook"
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	hooks := string(wt.MustJSON([]map[string]any{{"name": "inert.replicas-e2e.invalid", "admissionReviewVersions": []string{"v1"},
		"sideEffects": "None", "rules": inertRules, "clientConfig": map[string]any{"service": map[string]any{"namespace": ns, "name": name}}}}))
	create(t, c, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{serve.AnnotationWebhooks: hooks}}})
	create(t, c, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{serve.AnnotationWebhooks: hooks}}})
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := controlplane.WriteKubeconfig(suite.env, envtest.User{Name: "replicas-e2e", Groups: []string{"system:masters"}}, kubeconfig); err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(caFile, suite.env.WebhookInstallOptions.LocalServingCAData, 0o600))
	t.Setenv("POD_NAMESPACE", ns)
	var healths [2]int
	for i := range healths {
		healths[i] = controlplane.FreePort(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		var logs controlplane.LogBuffer
		done := make(chan int, 1)
		go func() {
			done <- app.Run(ctx, app.Streams{In: bytes.NewReader(nil), Out: io.Discard, Err: &logs}, []string{"serve",
				"--kubeconfig", kubeconfig, "--host", "127.0.0.1", "--port", strconv.Itoa(controlplane.FreePort(t, nil)),
				"--cert-dir", suite.env.WebhookInstallOptions.LocalServingCertDir, "--ca-file", caFile,
				"--health-addr", "127.0.0.1:" + strconv.Itoa(healths[i]), "--metrics-addr", "0",
				"--validating-webhook-configuration", name, "--mutating-webhook-configuration", name, "--register-webhooks",
				"--audit", "--leader-elect", "--namespace", ns,
				"--shutdown-delay", "0s", "--log-format", "text"})
		}()
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Errorf("replica %d did not stop within 30s", i)
			}
			if t.Failed() {
				t.Logf("replica %d's log:\n%s", i, logs.String())
			}
		})
	}
	for i, health := range healths {
		eventually(t, 60*time.Second, func() error {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(resp.Body)
				return fmt.Errorf("replica %d: /readyz HTTP %d %s", i, resp.StatusCode, b)
			}
			return nil
		})
	}
	lease := &coordinationv1.Lease{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "driverguard-audit"}, lease))
	require.NotNil(t, lease.Spec.HolderIdentity, "one replica leads the audit")
}
