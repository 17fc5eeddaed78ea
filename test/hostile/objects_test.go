package hostile

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// Bounds asserted here (docs/webhook.md, "Bounds").
const (
	maxResponseBytes = 64 << 10
	maxServeRSS      = 150 << 20
)

// oversized are RBLNDrivers built to exhaust the webhook: each is legal for the API server
// (under its request size limit, valid for the CRD's schema) and must be denied with a short
// answer.
func oversized() map[string]*v1alpha1.RBLNDriver {
	out := map[string]*v1alpha1.RBLNDriver{}

	sel := make(map[string]string, 100_000)
	for i := range 100_000 {
		sel[fmt.Sprintf("not a key %d!", i)] = "v"
	}
	out["100,000 invalid selector keys"] = wt.Driver("rbln-driver-keys", sel)

	d := wt.Driver("rbln-driver-tolerations", wt.Sel(operator.LabelFamily, "atom"))
	for range 100_000 {
		// the shortest toleration, so that 100,000 fit the API server's 3 MiB request limit
		d.Spec.Tolerations = append(d.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
	}
	out["100,000 tolerations"] = d

	out["a 1.4 MiB label value"] = wt.Driver("rbln-driver-value", wt.Sel(operator.LabelFamily, strings.Repeat("a", 1400<<10)))

	// 64 keys (the most a selector may hold), each with an invalid key and value: 128 findings,
	// of which the verdict keeps the first 50 and counts the rest.
	bad := map[string]string{}
	for i := range 64 {
		bad[fmt.Sprintf("bad key %02d!", i)] = "bad value!"
	}
	out["128 findings"] = wt.Driver("rbln-driver-findings", bad)

	labels := wt.Driver("rbln-driver-labels", wt.Sel(operator.LabelFamily, "atom"))
	labels.Labels = map[string]string{}
	for i := range 60_000 {
		labels.Labels["l"+strconv.Itoa(i)] = "v"
	}
	out["60,000 metadata labels"] = labels
	return out
}

// admittedDirectly are the objects that only the API server's additions (managed fields)
// push over the webhook's value limit: sent straight to the webhook they are judged, and
// admitted — the bound is on memory, not a rule.
var admittedDirectly = map[string]bool{"60,000 metadata labels": true}

// TestOversizedObjectsThroughAPIServer: each object is denied through the API server (dry
// run, as `kubectl create --dry-run=server` does) with a short message, the webhook's own
// answer to the same object is at most 64 KiB, and serve's memory stays under 150 MiB.
//
// Each object is sent to a serve process of its own, started just before (freshServe): with
// GOGC at 400 the heap one object grows is collected late and returned to the operating
// system later still, so on a shared process the peak measured the objects sent before it
// (and their order, and how busy the machine was) as much as the object itself.
func TestOversizedObjectsThroughAPIServer(t *testing.T) {
	requireEnv(t)
	c := newClient(t)
	objects := oversized()
	for _, name := range slices.Sorted(maps.Keys(objects)) {
		obj := objects[name]
		t.Run(name, func(t *testing.T) {
			freshServe(t)
			stop := peakWatcher(t)
			before := memory(t, "VmRSS")

			err := c.Create(t.Context(), obj, client.DryRunAll)
			require.Error(t, err, "the object was admitted")
			var status apierrors.APIStatus
			require.ErrorAs(t, err, &status)
			msg := status.Status().Message
			assert.LessOrEqual(t, len(msg), maxResponseBytes, "the API server's answer")
			t.Logf("through the API server: HTTP %d, %d bytes: %.300s", status.Status().Code, len(msg), msg)

			resp, size := postReview(t, wt.Review(wt.Request(admissionv1.Create, obj, nil)))
			require.NotNil(t, resp.Response)
			assert.Equal(t, admittedDirectly[name], resp.Response.Allowed, "allowed when sent straight to the webhook")
			assert.LessOrEqual(t, size, maxResponseBytes, "the webhook's own answer")
			t.Logf("from the webhook: %d bytes", size)

			peak := stop()
			t.Logf("serve's resident memory: %s before, peak %s (+%s)", mib(before), mib(peak), mib(peak-before))
			assert.Less(t, peak, int64(maxServeRSS), "serve's resident memory")
		})
	}
}

// TestFindingsAreCounted: beyond the first 50 findings the verdict counts the rest, and says so.
func TestFindingsAreCounted(t *testing.T) {
	requireEnv(t)
	resp, _ := postReview(t, wt.Review(wt.Request(admissionv1.Create, oversized()["128 findings"], nil)))
	require.NotNil(t, resp.Response.Result)
	r := resp.Response.Result
	require.NotNil(t, r.Details)
	assert.Equal(t, 50, len(r.Details.Causes), "causes")
	// The message lists what fits in 4 KiB and counts the rest: listed + counted = 128.
	m := regexp.MustCompile(`; and (\d+) more$`).FindStringSubmatch(r.Message)
	require.NotNil(t, m, "the message ends with a count: %.200s", r.Message[max(len(r.Message)-200, 0):])
	more, _ := strconv.Atoi(m[1])
	assert.Equal(t, 128, strings.Count(r.Message, "spec.nodeSelector[")+more)
	assert.LessOrEqual(t, len(r.Message), 4<<10)
}

// postReview sends an AdmissionReview straight to serve's RBLNDriver path (as any client that
// reaches the Service could) and returns the answer and its size in bytes.
func postReview(t *testing.T, review *admissionv1.AdmissionReview) (*admissionv1.AdmissionReview, int) {
	t.Helper()
	resp, err := webhookClient(t, nil).Post(webhookURL(webhook.PathValidateDriver), "application/json", bytes.NewReader(wt.MustJSON(review)))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	require.NoError(t, err)
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(body, &out), "HTTP %d: %.500s", resp.StatusCode, body)
	return &out, len(body)
}

// webhookClient is an HTTPS client of serve that trusts the suite's serving certificate; with
// from set, its connections leave from that local address.
func webhookClient(t *testing.T, from net.IP) *http.Client {
	t.Helper()
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		TLSClientConfig: tlsConfig(t),
		DialContext:     (&net.Dialer{LocalAddr: localAddr(from), Timeout: 10 * time.Second}).DialContext,
	}}
}

func tlsConfig(t *testing.T) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(suite.plane.Env.WebhookInstallOptions.LocalServingCAData))
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

func localAddr(ip net.IP) net.Addr {
	if ip == nil {
		return nil
	}
	return &net.TCPAddr{IP: ip}
}

func webhookAddr() string {
	wio := suite.plane.Env.WebhookInstallOptions
	return net.JoinHostPort(wio.LocalServingHost, strconv.Itoa(wio.LocalServingPort))
}

func webhookURL(path string) string { return "https://" + webhookAddr() + path }
