package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/driverguard/driverguard/api/v1alpha1"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// TestServeEndpoints: health, readiness, metrics and the TLS settings of the running server.
func TestServeEndpoints(t *testing.T) {
	requireEnv(t)
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + suite.healthAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: HTTP %d %s", path, resp.StatusCode, body)
		}
	}
	resp, err := http.Get("http://" + suite.healthAddr + "/readyz?verbose")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, check := range []string{"webhook-server", "cluster-view", "shutdown"} {
		if !strings.Contains(string(body), check) {
			t.Errorf("/readyz?verbose lacks %s:\n%s", check, body)
		}
	}

	// A request so that the webhook metrics have samples.
	c, _ := newClient(t)
	_ = dryRun(c, newDriverForMetrics())
	resp, err = http.Get(suite.metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{
		`controller_runtime_webhook_requests_total{code="200",webhook="/validate-rbln-driver"}`,
		`controller_runtime_webhook_latency_seconds_bucket{webhook="/validate-rbln-driver"`,
		"controller_runtime_webhook_requests_in_flight",
		"driverguard_webhook_state_rebuilds_total",
		"driverguard_webhook_state_rebuild_seconds_bucket",
		`driverguard_webhook_state_objects{kind="nodes"}`,
	} {
		if !strings.Contains(string(body), m) {
			t.Errorf("metrics lack %s", m)
		}
	}

	// TLS 1.3 by default, HTTP/1.1 only.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(suite.env.WebhookInstallOptions.LocalServingCAData)
	wio := suite.env.WebhookInstallOptions
	addr := net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
	if conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12}); err == nil {
		conn.Close()
		t.Error("a TLS 1.2 client was accepted; the default minimum is 1.3")
	}
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	st := conn.ConnectionState()
	conn.Close()
	if st.Version != tls.VersionTLS13 || st.NegotiatedProtocol == "h2" {
		t.Errorf("TLS version %s, protocol %q", tls.VersionName(st.Version), st.NegotiatedProtocol)
	}
}

func newDriverForMetrics() *v1alpha1.RBLNDriver {
	return wt.Driver("rbln-driver-metrics", wt.Sel("metrics.e2e/x", "1"))
}
