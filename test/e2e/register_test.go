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
	"github.com/driverguard/driverguard/test/controlplane"
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
	const (
		ns   = "ready-e2e"
		name = "ready-e2e-driverguard-webhook"
		user = "system:serviceaccount:" + ns + ":" + name
	)
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	svc := map[string]any{"namespace": ns, "name": name}
	hooks := func(n string) string {
		return string(wt.MustJSON([]map[string]any{{"name": n, "admissionReviewVersions": []string{"v1"}, "sideEffects": "None",
			"rules": inertRules, "clientConfig": map[string]any{"service": svc}}}))
	}
	create(t, c, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{webhook.AnnotationWebhooks: hooks("inert.ready-e2e.invalid")}}})
	create(t, c, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{webhook.AnnotationWebhooks: hooks("inert.ready-e2e.invalid")}}})
	// The pod serve runs in (its Events land on it; the chart passes the downward API).
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-0"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "webhook", Image: "driverguard.invalid/driverguard"}}}}
	create(t, c, pod)
	t.Setenv("POD_NAMESPACE", ns)
	t.Setenv("POD_NAME", pod.Name)
	t.Setenv("POD_UID", string(pod.UID))

	// What serve reads, and Events in its namespace; the webhook configurations: read only.
	subject := []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user}}
	create(t, c, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name + "-read"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"rebellions.ai"}, Resources: []string{"rblndrivers", "rblnclusterpolicies"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"}, Verbs: []string{"get", "list", "watch"}},
	}})
	create(t, c, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-read"}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name + "-read"}})
	create(t, c, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-events"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}}}})
	create(t, c, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-events"}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name + "-events"}})
	updater := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name + "-update"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"validatingwebhookconfigurations", "mutatingwebhookconfigurations"},
			ResourceNames: []string{name}, Verbs: []string{"update", "patch"}}}}
	create(t, c, updater)
	grant := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-update"}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: updater.Name}}

	dir := t.TempDir()
	kubeconfig, certDir := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "certs")
	if err := controlplane.WriteKubeconfig(suite.env, envtest.User{Name: user, Groups: []string{"system:authenticated"}}, kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	dns := name + "." + ns + ".svc"
	ca := wt.NewCA(t, "ready-e2e-ca")
	wt.WriteKeyPair(t, certDir, ca.Issue(t, dns, x509.ExtKeyUsageServerAuth, dns))
	if err := os.WriteFile(filepath.Join(certDir, "ca.crt"), ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	port, health, metrics := controlplane.FreePort(t, nil), controlplane.FreePort(t, nil), controlplane.FreePort(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var logs controlplane.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, app.Streams{In: bytes.NewReader(nil), Out: io.Discard, Err: &logs}, []string{"serve",
			"--kubeconfig", kubeconfig, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--cert-dir", certDir,
			"--health-addr", "127.0.0.1:" + strconv.Itoa(health), "--metrics-addr", "127.0.0.1:" + strconv.Itoa(metrics),
			"--validating-webhook-configuration", name, "--mutating-webhook-configuration", name, "--register-webhooks",
			"--shutdown-delay", "0s", "--log-format", "text"})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited with %d; logs:\n%s", code, logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s of cancellation")
		}
		if t.Failed() {
			t.Logf("serve's log:\n%s", logs.Tail(40))
		}
	})
	get := func(path string) (int, string) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", health, path))
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	notReady := func(why string) {
		t.Helper()
		eventually(t, 60*time.Second, func() error {
			for _, check := range []string{"webhook-server", "cluster-view"} {
				if code, body := get("/readyz/" + check); code != http.StatusOK {
					return fmt.Errorf("%s: HTTP %d %s", check, code, body)
				}
			}
			if code, _ := get("/readyz"); code == http.StatusOK {
				return fmt.Errorf("/readyz: HTTP 200 while the webhooks are not registered (%s)", why)
			}
			if code, body := get("/readyz/webhook-registration"); code == http.StatusOK || !strings.Contains(body, why) {
				return fmt.Errorf("/readyz/webhook-registration: HTTP %d %q, want it to say %q", code, body, why)
			}
			return nil
		})
	}
	ready := func() {
		t.Helper()
		eventually(t, 60*time.Second, func() error {
			if code, body := get("/readyz"); code != http.StatusOK {
				return fmt.Errorf("/readyz: HTTP %d %s", code, body)
			}
			return nil
		})
	}
	registered := func(kind string) float64 {
		t.Helper()
		return metricValue(t, metrics, "driverguard_webhook_registered", map[string]string{"kind": kind, "name": name})
	}
	event := func(reason, says string) {
		t.Helper()
		eventually(t, 30*time.Second, func() error {
			list := &eventsv1.EventList{}
			if err := c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
				return err
			}
			for _, e := range list.Items {
				if e.Regarding.Kind == "Pod" && e.Regarding.Name == pod.Name && e.Regarding.UID == pod.UID && e.Reason == reason && strings.Contains(e.Note, says) {
					return nil
				}
			}
			return fmt.Errorf("no %s Event on Pod %s saying %q among %d", reason, pod.Name, says, len(list.Items))
		})
	}
	webhooks := func() (v admissionregistrationv1.ValidatingWebhookConfiguration, m admissionregistrationv1.MutatingWebhookConfiguration) {
		t.Helper()
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, &v))
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: name}, &m))
		return v, m
	}

	// No permission to update the configurations: serving, synced, and not Ready.
	notReady("forbidden")
	v, m := webhooks()
	assert.Empty(t, v.Webhooks)
	assert.Empty(t, m.Webhooks)
	assert.Zero(t, registered("ValidatingWebhookConfiguration"))
	assert.Zero(t, registered("MutatingWebhookConfiguration"))
	assert.Positive(t, metricValue(t, metrics, "driverguard_webhook_registration_failures_total",
		map[string]string{"kind": "ValidatingWebhookConfiguration", "name": name, "reason": "Forbidden"}))
	event("WebhookRegistrationFailed", "forbidden")
	assert.Contains(t, logs.String(), "not ready")

	// Granted: registered with the CA, Ready.
	create(t, c, grant)
	ready()
	v, m = webhooks()
	require.Len(t, v.Webhooks, 1)
	require.Len(t, m.Webhooks, 1)
	assert.Equal(t, ca.PEM, v.Webhooks[0].ClientConfig.CABundle)
	assert.Equal(t, ca.PEM, m.Webhooks[0].ClientConfig.CABundle)
	assert.Equal(t, 1.0, registered("ValidatingWebhookConfiguration"))
	assert.Equal(t, 1.0, registered("MutatingWebhookConfiguration"))
	event("WebhooksRegistered", name)

	// The permission taken away, then the configuration emptied by hand: not Ready.
	deleteAndWait(t, c, grant)
	v.Webhooks = nil
	require.NoError(t, c.Update(t.Context(), &v))
	notReady("forbidden")
	assert.Zero(t, registered("ValidatingWebhookConfiguration"))
	assert.Equal(t, 1.0, registered("MutatingWebhookConfiguration"), "the mutating configuration still holds its webhook")
	grant.ResourceVersion, grant.UID = "", ""
	create(t, c, grant)
	ready()

	// A certificate rotated under the configurations (a new CA, mounted as the kubelet would):
	// their caBundle no longer verifies it, so the API server could not call this pod. Once
	// the injector (cert-controller, cert-manager) writes the new CA, Ready again.
	rotated := wt.NewCA(t, "ready-e2e-ca-2")
	wt.WriteKeyPair(t, certDir, rotated.Issue(t, dns, x509.ExtKeyUsageServerAuth, dns))
	require.NoError(t, os.WriteFile(filepath.Join(certDir, "ca.crt"), rotated.PEM, 0o600))
	notReady("does not verify this pod's serving certificate")
	assert.Zero(t, registered("ValidatingWebhookConfiguration"))
	assert.Positive(t, metricValue(t, metrics, "driverguard_webhook_registration_failures_total",
		map[string]string{"kind": "ValidatingWebhookConfiguration", "name": name, "reason": "CANotTrusted"}))
	event("WebhookRegistrationFailed", "does not verify this pod's serving certificate")
	v, m = webhooks()
	v.Webhooks[0].ClientConfig.CABundle = rotated.PEM
	m.Webhooks[0].ClientConfig.CABundle = rotated.PEM
	require.NoError(t, c.Update(t.Context(), &v))
	require.NoError(t, c.Update(t.Context(), &m))
	ready()
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
		Annotations: map[string]string{webhook.AnnotationWebhooks: hooks}}})
	create(t, c, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{webhook.AnnotationWebhooks: hooks}}})
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
