package webhook_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

func TestReview(t *testing.T) {
	t.Parallel()
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil)}, nil, nil), webhook.Options{})
	req := wt.Request(admissionv1.Create, wt.Driver("rbln-driver-x", nil), nil)
	out, err := hooks.Review(context.Background(), wt.MustJSON(wt.Review(req)))
	if err != nil {
		t.Fatal(err)
	}
	if out.Request == nil || out.Request.UID != req.UID || out.Response == nil || out.Response.UID != req.UID {
		t.Fatalf("review %+v", out)
	}
	if out.Response.Allowed || !strings.Contains(out.Response.Result.Message, "spec.nodeSelector: Required value") {
		t.Errorf("response %+v", out.Response)
	}

	ds := wt.DaemonSet("ns", "d", "rbln-driver", "smd", nil)
	out, err = hooks.Review(context.Background(), wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, ds, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if !out.Response.Allowed || out.Response.PatchType == nil || len(out.Response.Patch) == 0 {
		t.Errorf("DaemonSet review: %+v", out.Response)
	}

	for name, body := range map[string]string{
		"not JSON":      "nope",
		"no request":    `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
		"other kind":    `{"apiVersion":"v1","kind":"Pod"}`,
		"unhandled":     `{"kind":"AdmissionReview","request":{"uid":"u","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE"}}`,
		"request array": `{"kind":"AdmissionReview","request":[]}`,
	} {
		if _, err := hooks.Review(context.Background(), []byte(body)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestKindsAreQuotedCut: a 100 KB kind, group or version, in the AdmissionReview or its
// request, is quoted as its first 80 bytes and its length — by Review (`driverguard review`)
// and by a webhook path the kind was sent to by mistake.
func TestKindsAreQuotedCut(t *testing.T) {
	t.Parallel()
	hooks := webhook.New(state(nil, nil, nil), webhook.Options{})
	long := strings.Repeat("k", 100<<10)
	cut := strings.Repeat("k", validation.MaxQuotedValue) + "... (102400 bytes)"
	review := func(kind string, gvk metav1.GroupVersionKind) []byte {
		b, err := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": kind,
			"request": map[string]any{"uid": "u", "kind": gvk, "operation": "CREATE", "object": map[string]any{}}})
		require.NoError(t, err)
		return b
	}
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"the review's kind", review(long, metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}),
			`kind is "` + cut + `", expected AdmissionReview (admission.k8s.io/v1)`},
		{"request.kind's kind", review("AdmissionReview", metav1.GroupVersionKind{Version: "v1", Kind: long}),
			"request.kind v1/" + cut + " is not handled by driverguard (RBLNDriver, RBLNClusterPolicy and DaemonSet are)"},
		{"request.kind's group", review("AdmissionReview", metav1.GroupVersionKind{Group: long, Version: "v1", Kind: "RBLNDriver"}),
			"request.kind " + cut + "/v1/RBLNDriver is not handled by driverguard"},
		{"request.kind's version", review("AdmissionReview", metav1.GroupVersionKind{Group: "apps", Version: long, Kind: "Deployment"}),
			"request.kind apps/" + cut + "/Deployment is not handled by driverguard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := hooks.Review(t.Context(), tt.body)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Less(t, len(err.Error()), 400)
		})
	}
	t.Run("sent to the wrong path", func(t *testing.T) {
		t.Parallel()
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create,
			Kind: metav1.GroupVersionKind{Group: "rebellions.ai", Version: "v1alpha1", Kind: long}, Object: runtime.RawExtension{Raw: []byte("{}")}}}
		resp := handle(t, hooks, webhook.PathValidateDriver, req)
		require.NotNil(t, resp.Result)
		assert.Equal(t, "request.kind is rebellions.ai/v1alpha1/"+cut+", but this webhook path handles rebellions.ai/v1alpha1/RBLNDriver: point the webhook configuration's rules for rebellions.ai/v1alpha1/"+cut+" at its own path", resp.Result.Message)
	})
}
