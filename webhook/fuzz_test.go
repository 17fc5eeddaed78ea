package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// FuzzAdmissionReview sends arbitrary bytes to every webhook path through the handler `serve`
// runs: whatever arrives, the answer is an AdmissionReview with a response (never a panic, a
// 500 or an empty body) and at most 64 KiB. Seeds: the replayed requests of test/testdata,
// valid requests of every kind, and the hostile shapes of bounds_test.go cut down.
// `make fuzz` runs it for a fixed time; `go test` runs the seeds.
func FuzzAdmissionReview(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("..", "test", "testdata", "review", "requests", "*.json"))
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	drv := wt.Driver("rbln-driver-x", wt.Sel(operator.LabelFamily, "atom"))
	ds := wt.DaemonSet("npu", "rbln-driver-atom-pool", "rbln-driver-atom", "driver", wt.PoolLabels("atom", "ubuntu", "22.04", "6.8.0-90-generic"))
	for _, body := range [][]byte{
		wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, drv, nil))),
		wt.MustJSON(wt.Review(wt.Request(admissionv1.Update, drv, wt.Driver("rbln-driver-x", wt.Sel("env", "x"))))),
		wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, wt.ClusterPolicy(true), nil))),
		wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, ds, nil))),
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"rebellions.ai","version":"v1alpha1","kind":"RBLNDriver"},"operation":"CREATE","object":{"spec":{"nodeSelector":{"a b!":"c d!","rebellions.ai/npu.driver.owner":"x"}}}}}`),
		[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"rebellions.ai","version":"v1alpha1","kind":"RBLNDriver"},"operation":"CREATE","object":{"spec":{"x":[` + strings.Repeat("0,", 1000) + `0]}}}}`),
		[]byte(`{"request":null}`),
		[]byte(`null`),
		[]byte(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"apps","version":"v1","kind":"DaemonSet"},"operation":"UPDATE","object":{"metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z"}}}}`),
	} {
		f.Add(body)
	}
	hooks := webhook.New(benchState(20, 5), webhook.Options{})
	handlers := hooks.Handlers()
	paths := []string{webhook.PathValidateDriver, webhook.PathValidateClusterPolicy, webhook.PathMutateDaemonSet}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, path := range paths {
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			handlers[path].ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: HTTP %d: %.300s", path, rec.Code, rec.Body.String())
			}
			if rec.Body.Len() > 64<<10 {
				t.Fatalf("%s: a %d-byte answer", path, rec.Body.Len())
			}
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil || review.Response == nil {
				t.Fatalf("%s: not an AdmissionReview with a response (%v): %.300s", path, err, rec.Body.String())
			}
			if r := review.Response.Result; r != nil && r.Code >= 500 && r.Code != http.StatusServiceUnavailable {
				t.Fatalf("%s: %d %s", path, r.Code, r.Message)
			}
		}
	})
}
