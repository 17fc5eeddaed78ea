package webhook_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/operator"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// TestReviewVersions: the answer is an AdmissionReview of the request's version (v1, or
// v1beta1 for a configuration that allows it), with the request's UID; anything that is not an
// AdmissionReview of those versions is answered with a 400 in the response.
func TestReviewVersions(t *testing.T) {
	h := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil)}, nil, nil), webhook.Options{}).Handlers()[webhook.PathValidateDriver]
	review := wt.Review(wt.Request(admissionv1.Create, wt.Driver("rbln-driver-atom", wt.Sel(operator.LabelFamily, "atom")), nil))
	post := func(t *testing.T, apiVersion, kind string) map[string]any {
		t.Helper()
		r := *review
		r.APIVersion, r.Kind = apiVersion, kind
		req := httptest.NewRequest(http.MethodPost, webhook.PathValidateDriver, bytes.NewReader(wt.MustJSON(&r)))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		var out map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
		return out
	}
	for _, v := range []string{"admission.k8s.io/v1", "admission.k8s.io/v1beta1"} {
		out := post(t, v, "AdmissionReview")
		assert.Equal(t, v, out["apiVersion"])
		assert.Equal(t, "AdmissionReview", out["kind"])
		resp := out["response"].(map[string]any)
		assert.Equal(t, true, resp["allowed"], "%v", resp)
		assert.Equal(t, string(review.Request.UID), resp["uid"])
	}
	for _, tc := range []struct{ apiVersion, kind, want string }{
		{"admission.k8s.io/v2", "AdmissionReview", `apiVersion is "admission.k8s.io/v2"`},
		{"admission.k8s.io/v1", "", `kind is ""`},
		{"v1", "Pod", `kind is "Pod"`},
	} {
		out := post(t, tc.apiVersion, tc.kind)
		assert.Equal(t, "admission.k8s.io/v1", out["apiVersion"])
		resp := out["response"].(map[string]any)
		assert.Equal(t, false, resp["allowed"])
		status := resp["status"].(map[string]any)
		assert.EqualValues(t, http.StatusBadRequest, status["code"])
		assert.Contains(t, status["message"], tc.want)
	}
}
