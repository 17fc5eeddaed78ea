package webhook_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// hostileReview is an AdmissionReview built to exhaust the webhook.
type hostileReview struct {
	name string
	path string
	body []byte
}

func hostileReviews(t testing.TB) []hostileReview {
	t.Helper()
	driver := func(mutate func(d *v1alpha1.RBLNDriver)) []byte {
		d := wt.Driver("rbln-driver-hostile", wt.Sel(operator.LabelFamily, "atom"))
		mutate(d)
		return wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, d, nil)))
	}
	var out []hostileReview
	add := func(name, path string, body []byte) { out = append(out, hostileReview{name, path, body}) }
	add("selector of 100,000 invalid keys", webhook.PathValidateDriver, driver(func(d *v1alpha1.RBLNDriver) {
		for i := range 100_000 {
			d.Spec.NodeSelector[fmt.Sprintf("not a key %d!", i)] = "v"
		}
	}))
	add("selector of 40,000 valid keys", webhook.PathValidateDriver, driver(func(d *v1alpha1.RBLNDriver) {
		for i := range 40_000 {
			d.Spec.NodeSelector["k"+strconv.Itoa(i)] = "v"
		}
	}))
	add("64 keys, 128 findings", webhook.PathValidateDriver, driver(func(d *v1alpha1.RBLNDriver) {
		d.Spec.NodeSelector = map[string]string{}
		for i := range 64 {
			d.Spec.NodeSelector[fmt.Sprintf("bad key %02d!", i)] = "bad value!"
		}
	}))
	add("100,000 tolerations", webhook.PathValidateDriver, driver(func(d *v1alpha1.RBLNDriver) {
		d.Spec.Tolerations = make([]corev1.Toleration, 100_000)
	}))
	add("a 1.4 MiB label value", webhook.PathValidateDriver, driver(func(d *v1alpha1.RBLNDriver) {
		d.Spec.NodeSelector[operator.LabelFamily] = strings.Repeat("a", 1400<<10)
	}))
	add("a 1 MiB selector key", webhook.PathValidateDriver, driver(func(d *v1alpha1.RBLNDriver) {
		d.Spec.NodeSelector[strings.Repeat("k", 1<<20)] = "v"
	}))
	add("90,000 metadata labels (judged)", webhook.PathValidateDriver, driver(func(d *v1alpha1.RBLNDriver) {
		d.Labels = map[string]string{}
		for i := range 90_000 {
			d.Labels["l"+strconv.Itoa(i)] = "v"
		}
	}))
	add("6 MiB of small numbers", webhook.PathValidateDriver, []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"rebellions.ai","version":"v1alpha1","kind":"RBLNDriver"},"operation":"CREATE","object":{"apiVersion":"rebellions.ai/v1alpha1","kind":"RBLNDriver","metadata":{"name":"x"},"spec":{"x":[`+
		strings.Repeat("0,", 3<<20)+`0]}}}}`))
	ds := wt.DaemonSet("npu", "rbln-driver-atom-pool", "rbln-driver-atom", "driver", wt.PoolLabels("atom", "ubuntu", "22.04", "6.8.0-90-generic"))
	for i := range 90_000 {
		ds.Spec.Template.Spec.Containers[0].Args = append(ds.Spec.Template.Spec.Containers[0].Args, strconv.Itoa(i))
	}
	add("driver DaemonSet with 90,000 args", webhook.PathMutateDaemonSet, wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, ds, nil))))
	return out
}

// maxRequestAlloc bounds what one request may allocate, whatever it holds: a small multiple
// of the largest body the webhook reads (7 MiB). In flight, the limiter admits at most
// DefaultMaxInFlightBytes (8 MiB) of bodies, so this bounds the memory admission can take.
const maxRequestAlloc = 96 << 20

// TestHostileRequestsAreBounded: each hostile AdmissionReview is answered (not allowed, or
// allowed when it is only large), with at most 64 KiB, allocating at most maxRequestAlloc, with
// the bundled policy library evaluating what it is given.
func TestHostileRequestsAreBounded(t *testing.T) {
	engine, err := policy.New(context.Background(), policy.Options{Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	hooks := webhook.New(benchState(100, 10), webhook.Options{Policy: engine})
	for _, h := range hostileReviews(t) {
		t.Run(h.name, func(t *testing.T) {
			handler := hooks.Handlers()[h.path]
			serve := func() *httptest.ResponseRecorder {
				req := httptest.NewRequest(http.MethodPost, h.path, bytes.NewReader(h.body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				return rec
			}
			serve() // warm: compiled policies, caches
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			rec := serve()
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("body %d KiB, allocated %d KiB, answer %d bytes: %.200s", len(h.body)>>10, alloc>>10, rec.Body.Len(), rec.Body.String())
			assert.Equal(t, http.StatusOK, rec.Code)
			assert.LessOrEqual(t, rec.Body.Len(), 64<<10, "answer size")
			assert.LessOrEqual(t, alloc, uint64(maxRequestAlloc), "allocated")
		})
	}
	_ = schema.GroupVersionKind{}
}
