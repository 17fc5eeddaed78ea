package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/serve"
	"github.com/driverguard/driverguard/test/controlplane"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// runServer serves the webhook in-process with opts (the host, ports and certificates of the
// suite filled in) until the test ends, and returns the webhook and metrics ports.
func runServer(t *testing.T, opts serve.Options) (port, metrics int) {
	t.Helper()
	port, metrics, health := controlplane.FreePort(t, nil), controlplane.FreePort(t, nil), controlplane.FreePort(t, nil)
	opts.Host, opts.Port = "127.0.0.1", port
	if opts.CertDir == "" {
		opts.CertDir = suite.env.WebhookInstallOptions.LocalServingCertDir
	}
	opts.HealthAddr, opts.MetricsAddr = "127.0.0.1:"+strconv.Itoa(health), "127.0.0.1:"+strconv.Itoa(metrics)
	opts.ShutdownDelay = 10 * time.Millisecond
	ready := make(chan struct{})
	var once sync.Once
	opts.OnReady = func() { once.Do(func() { close(ready) }) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve.Run(ctx, suite.cfg, opts) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-ready:
	case err := <-done:
		done <- err // for the cleanup
		t.Fatalf("the server stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not ready")
	}
	return port, metrics
}

// TestSecureMetrics: with MetricsSecure, /metrics and /policyz are HTTPS and answer only a
// token the API server authenticates and authorizes for the path (the chart's metrics-reader
// ClusterRole); anyone else gets 401 or 403.
func TestSecureMetrics(t *testing.T) {
	requireEnv(t)
	_, metrics := runServer(t, serve.Options{MetricsSecure: true, PolicyStatus: func() policy.Status { return policy.Status{Generation: 1} }})
	cs, err := kubernetes.NewForConfig(suite.cfg)
	if err != nil {
		t.Fatal(err)
	}
	const ns, sa = chartNamespace, "metrics-scraper"
	ctx := t.Context()
	token := func(name string) string {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a token for %s: %v", name, err)
		}
		return tok.Status.Token
	}
	reader, stranger := token(sa), token("metrics-stranger")
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the suite's own certificate
	get := func(path, token string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", metrics, path), nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: HTTP %d, want 401", code)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-reader"}, Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/policyz"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "e2e-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}
	c, _ := newClient(t)
	create(t, c, role)
	create(t, c, binding)
	t.Cleanup(func() { _ = c.Delete(context.Background(), binding); _ = c.Delete(context.Background(), role) })
	if code := get("/metrics", stranger); code != http.StatusForbidden {
		t.Errorf("/metrics with a token not allowed to get it: HTTP %d, want 403", code)
	}
	eventually(t, 10*time.Second, func() error {
		for _, p := range []string{"/metrics", "/policyz"} {
			if code := get(p, reader); code != http.StatusOK {
				return fmt.Errorf("%s with the reader's token: HTTP %d", p, code)
			}
		}
		return nil
	})
}

// TestClientCertificateRequired: with ClientCAFile, a caller without a certificate the CA
// signed is refused in the TLS handshake; one with such a certificate is answered.
func TestClientCertificateRequired(t *testing.T) {
	requireEnv(t)
	dir := t.TempDir()
	ca := wt.NewCA(t, "apiserver-client-ca")
	caFile := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(caFile, ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	client := ca.Issue(t, "kube-apiserver", x509.ExtKeyUsageClientAuth)

	port, _ := runServer(t, serve.Options{ClientCAFile: caFile})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(suite.env.WebhookInstallOptions.LocalServingCAData)
	body := wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver", nil), nil)))
	post := func(certs []tls.Certificate) error {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs, MinVersion: tls.VersionTLS13}}}
		resp, err := hc.Post(fmt.Sprintf("https://127.0.0.1:%d%s", port, webhook.PathValidateDriver), "application/json", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	}
	if err := post(nil); err == nil {
		t.Error("a caller without a client certificate was answered")
	}
	if err := post([]tls.Certificate{client}); err != nil {
		t.Errorf("the API server's client certificate: %v", err)
	}
}
