package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/driverguard/driverguard/cmd/driverguard/app"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/serve"
	"github.com/driverguard/driverguard/test/controlplane"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// inertRules match a resource that does not exist, so the webhook configurations of these
// tests never intercept anything.
var inertRules = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{"e2e.invalid"}, APIVersions: []string{"v1"}, Resources: []string{"nothing"}},
}}

// TestServeCommandSelfSignedCertificates runs `driverguard serve --cert-rotation` (the CLI,
// with the bundled policies) against the API server: it bootstraps a CA and a serving
// certificate into the Secret, registers the webhooks of both configurations (from their
// annotation, as the chart installs them) with the CA, serves TLS with that certificate once
// the Secret is "mounted"
// (copied into --cert-dir here, as the kubelet would), and stops cleanly on cancellation.
func TestServeCommandSelfSignedCertificates(t *testing.T) {
	c, _ := newClient(t)
	const (
		ns     = "serve-e2e"
		name   = "serve-e2e-driverguard-webhook"
		secret = name + "-cert"
	)
	// envtest runs no namespace controller: the namespace is never deleted.
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	create(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secret}})
	sideEffects := admissionregistrationv1.SideEffectClassNone
	svc := &admissionregistrationv1.ServiceReference{Namespace: ns, Name: name}
	// As the chart installs them: no webhooks, only the annotation serve registers them from.
	inert := func() string {
		return string(wt.MustJSON([]map[string]any{{
			"name": "inert.e2e.invalid", "admissionReviewVersions": []string{"v1"}, "sideEffects": sideEffects,
			"rules": inertRules, "clientConfig": map[string]any{"service": svc},
		}}))
	}
	create(t, c, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{serve.AnnotationWebhooks: inert()}},
	})
	create(t, c, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{serve.AnnotationWebhooks: inert()}},
	})

	dir := t.TempDir()
	kubeconfig, certDir := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "certs")
	if err := controlplane.WriteKubeconfig(suite.env, envtest.User{Name: "serve-e2e", Groups: []string{"system:masters"}}, kubeconfig); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	port, health := controlplane.FreePort(t, nil), controlplane.FreePort(t, nil)

	ctx, cancel := context.WithCancel(context.Background())
	var logs controlplane.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, app.Streams{In: bytes.NewReader(nil), Out: io.Discard, Err: &logs}, []string{"serve",
			"--kubeconfig", kubeconfig, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--cert-dir", certDir,
			"--health-addr", "127.0.0.1:" + strconv.Itoa(health), "--metrics-addr", "0",
			"--cert-rotation", "--namespace", ns, "--cert-secret", secret, "--service-name", name,
			"--validating-webhook-configuration", name, "--mutating-webhook-configuration", name, "--register-webhooks",
			"--shutdown-delay", "100ms", "--log-format", "text"})
	}()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cancel()
			<-done
		}
	})

	// The Secret is filled with a CA and a certificate for <service>.<namespace>.svc.
	var s corev1.Secret
	eventually(t, 30*time.Second, func() error {
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: secret}, &s); err != nil {
			return err
		}
		for _, k := range []string{"ca.crt", "ca.key", "tls.crt", "tls.key"} {
			if len(s.Data[k]) == 0 {
				return fmt.Errorf("the Secret has no %s yet; logs:\n%s", k, logs.String())
			}
		}
		return nil
	})
	// The kubelet would mount the Secret; copy it.
	for _, k := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(certDir, k), s.Data[k], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The webhooks are registered once serve serves, with the CA, in both configurations.
	eventually(t, 60*time.Second, func() error {
		var v admissionregistrationv1.ValidatingWebhookConfiguration
		var m admissionregistrationv1.MutatingWebhookConfiguration
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &v); err != nil {
			return err
		}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, &m); err != nil {
			return err
		}
		if len(v.Webhooks) != 1 || len(m.Webhooks) != 1 {
			return fmt.Errorf("the webhooks are not registered yet")
		}
		if !bytes.Equal(v.Webhooks[0].ClientConfig.CABundle, s.Data["ca.crt"]) || !bytes.Equal(m.Webhooks[0].ClientConfig.CABundle, s.Data["ca.crt"]) {
			return fmt.Errorf("the CA is not injected yet")
		}
		return nil
	})
	// Ready, serving TLS 1.3 with the generated certificate for the service's DNS name.
	eventually(t, 60*time.Second, func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: HTTP %d", resp.StatusCode)
		}
		return nil
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.Data["ca.crt"])
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), &tls.Config{RootCAs: pool, ServerName: name + "." + ns + ".svc"})
	if err != nil {
		t.Fatalf("TLS with the rotated certificate: %v", err)
	}
	if v := conn.ConnectionState().Version; v != tls.VersionTLS13 {
		t.Errorf("TLS version %s", tls.VersionName(v))
	}
	conn.Close()

	// A request through the served handler, with the bundled policies.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: name + "." + ns + ".svc"}}}
	body := wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-serve", nil), nil)))
	resp, err := hc.Post(fmt.Sprintf("https://127.0.0.1:%d%s", port, webhook.PathValidateDriver), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if review.Response == nil || review.Response.Allowed {
		t.Errorf("an instance without a selector was allowed: %+v", review.Response)
	}

	cancel()
	stopped = true
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited with %d; logs:\n%s", code, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30s of cancellation")
	}
}

// TestGracefulShutdown: a request in flight when the server is told to stop still gets its
// answer; new connections are refused afterwards.
func TestGracefulShutdown(t *testing.T) {
	requireEnv(t)
	port, health := controlplane.FreePort(t, nil), controlplane.FreePort(t, nil)
	slow := &wt.Evaluator{Fn: func(ctx context.Context, _ *policy.Input) (*policy.Decision, error) {
		select {
		case <-time.After(1500 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &policy.Decision{Warn: []policy.Message{{Package: "driverguard.slow", Msg: "took its time"}}}, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, suite.cfg, serve.Options{
			Options:       webhook.Options{Policy: slow},
			Host:          "127.0.0.1",
			Port:          port,
			CertDir:       suite.env.WebhookInstallOptions.LocalServingCertDir,
			HealthAddr:    "127.0.0.1:" + strconv.Itoa(health),
			ShutdownDelay: 200 * time.Millisecond,
			OnReady:       func() { once.Do(func() { close(ready) }) },
		})
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("not ready")
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(suite.env.WebhookInstallOptions.LocalServingCAData)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, webhook.PathValidateDriver)
	body := wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-slow", wt.Sel("slow.e2e/x", "1")), nil)))

	answered := make(chan *admissionv1.AdmissionReview, 1)
	go func() {
		resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Errorf("the in-flight request failed: %v", err)
			answered <- nil
			return
		}
		defer resp.Body.Close()
		var r admissionv1.AdmissionReview
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Errorf("decoding the in-flight answer: %v", err)
		}
		answered <- &r
	}()
	time.Sleep(300 * time.Millisecond) // the request is being evaluated
	cancel()

	// Not ready while draining.
	eventually(t, 2*time.Second, func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", health))
		if err != nil {
			return nil // already stopped
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return fmt.Errorf("still ready while shutting down")
		}
		return nil
	})
	select {
	case r := <-answered:
		if r == nil || r.Response == nil || !r.Response.Allowed || len(r.Response.Warnings) != 1 {
			t.Errorf("in-flight answer %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the in-flight request got no answer")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return")
	}
	if _, err := hc.Post(url, "application/json", bytes.NewReader(body)); err == nil {
		t.Error("a request after shutdown was served")
	}
}
