package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

var allPaths = []string{webhook.PathValidateDriver, webhook.PathValidateClusterPolicy, webhook.PathMutateDaemonSet}

func TestMalformedRequestsAreDeniedWith400(t *testing.T) {
	t.Parallel()
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil)}, nil, nil), webhook.Options{})
	driverKind := metav1.GroupVersionKind{Group: "rebellions.ai", Version: "v1alpha1", Kind: "RBLNDriver"}
	cpKind := metav1.GroupVersionKind{Group: "rebellions.ai", Version: "v1alpha1", Kind: "RBLNClusterPolicy"}
	dsKind := metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
	req := func(kind metav1.GroupVersionKind, op admissionv1.Operation, obj, old string) admission.Request {
		r := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "u", Kind: kind, Operation: op}}
		if obj != "" {
			r.Object = runtime.RawExtension{Raw: []byte(obj)}
		}
		if old != "" {
			r.OldObject = runtime.RawExtension{Raw: []byte(old)}
		}
		return r
	}
	valid := string(wt.MustJSON(wt.Driver("rbln-driver-x", wt.Sel("env", "x"))))
	tests := []struct {
		name string
		path string
		req  admission.Request
		want string
	}{
		{"no object", webhook.PathValidateDriver, req(driverKind, admissionv1.Create, "", ""), "request.object is empty"},
		{"object not JSON", webhook.PathValidateDriver, req(driverKind, admissionv1.Create, "{not json", ""), "request.object is not a JSON object"},
		{"object is an array", webhook.PathValidateDriver, req(driverKind, admissionv1.Create, "[1,2]", ""), "request.object is not a JSON object"},
		{"object of another kind", webhook.PathValidateDriver, req(driverKind, admissionv1.Create, `{"apiVersion":"v1","kind":"Pod"}`, ""), "request.object is a v1 Pod, expected a rebellions.ai/v1alpha1 RBLNDriver"},
		{"wrong field type", webhook.PathValidateDriver, req(driverKind, admissionv1.Create, `{"spec":{"nodeSelector":"atom"}}`, ""), "request.object is not a valid rebellions.ai/v1alpha1 RBLNDriver"},
		{"update without oldObject", webhook.PathValidateDriver, req(driverKind, admissionv1.Update, valid, ""), "request.oldObject is empty"},
		{"unknown operation", webhook.PathValidateDriver, req(driverKind, "PATCH", valid, ""), `request.operation "PATCH" is not one of`},
		{"kind sent to the wrong path", webhook.PathValidateDriver, req(dsKind, admissionv1.Create, valid, ""), "request.kind is apps/v1/DaemonSet, but this webhook path handles rebellions.ai/v1alpha1/RBLNDriver"},
		{"no kind", webhook.PathValidateClusterPolicy, req(metav1.GroupVersionKind{}, admissionv1.Create, "{}", ""), "request.kind is empty"},
		{"cluster policy not JSON", webhook.PathValidateClusterPolicy, req(cpKind, admissionv1.Create, "nope", ""), "request.object is not a JSON object"},
		{"daemonset not JSON", webhook.PathMutateDaemonSet, req(dsKind, admissionv1.Create, "\x00\x01", ""), "request.object is not a JSON object"},
		{"daemonset empty", webhook.PathMutateDaemonSet, req(dsKind, admissionv1.Update, "", ""), "request.object is empty"},
		{"daemonset with bad containers", webhook.PathMutateDaemonSet, req(dsKind, admissionv1.Create, `{"metadata":{"labels":{"app.kubernetes.io/name":"rbln-npu-operator","app.kubernetes.io/component":"rbln-driver"}},"spec":{"template":{"spec":{"containers":{}}}}}`, ""), "request.object is not a valid apps/v1 DaemonSet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := handle(t, hooks, tt.path, tt.req)
			if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
				t.Fatalf("want a 400 denial, got allowed=%v result=%+v", resp.Allowed, resp.Result)
			}
			if !strings.Contains(resp.Result.Message, tt.want) {
				t.Errorf("message %q does not contain %q", resp.Result.Message, tt.want)
			}
		})
	}
}

// TestHTTPTransport sends raw bodies to the served handlers: nothing ever answers 500 or
// panics, and bad bodies get a 400 inside an AdmissionReview.
func TestHTTPTransport(t *testing.T) {
	t.Parallel()
	hooks := webhook.New(state(nil, nil, nil), webhook.Options{})
	mux := http.NewServeMux()
	for p, h := range hooks.Handlers() {
		mux.Handle(p, h)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	bodies := map[string]string{
		"empty":             "",
		"not JSON":          "garbage",
		"no request":        `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
		"request is a list": `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":[]}`,
		"huge nesting":      strings.Repeat("[", 10000),
	}
	for _, path := range allPaths {
		for name, body := range bodies {
			resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var review admissionv1.AdmissionReview
			err = json.NewDecoder(resp.Body).Decode(&review)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || err != nil || review.Response == nil {
				t.Errorf("%s %s: HTTP %d, decode error %v", path, name, resp.StatusCode, err)
				continue
			}
			if review.Response.Allowed {
				t.Errorf("%s %s: allowed", path, name)
			}
			if c := review.Response.Result.Code; c >= 500 {
				t.Errorf("%s %s: code %d", path, name, c)
			}
		}
	}
	// The wrong content type is refused by the transport.
	resp, err := http.Post(srv.URL+webhook.PathValidateDriver, "text/plain", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// FuzzHandle feeds arbitrary objects to every handler: whatever the bytes, the answer is a
// response (never a panic), and never a 5xx.
func FuzzHandle(f *testing.F) {
	f.Add(0, "CREATE", string(wt.MustJSON(wt.Driver("rbln-driver-x", wt.Sel("env", "x")))))
	f.Add(1, "UPDATE", string(wt.MustJSON(wt.ClusterPolicy(true))))
	f.Add(2, "CREATE", string(wt.MustJSON(wt.DaemonSet("n", "d", "rbln-driver", "driver", wt.PoolLabels("atom", "ubuntu", "22.04", "6.8.0")))))
	f.Add(2, "CREATE", `{"metadata":{"labels":{"app.kubernetes.io/name":"rbln-npu-operator","app.kubernetes.io/component":"rbln-smd","rebellions.ai/driver-instance":"rbln-driver"}},"spec":null}`)
	f.Add(2, "CREATE", `{"metadata":{"labels":{"app.kubernetes.io/name":"rbln-npu-operator","app.kubernetes.io/component":"rbln-driver","rebellions.ai/driver-instance":"rbln-driver"}},"spec":{"template":{"spec":{"nodeSelector":{"rebellions.ai/npu.family":"atom","feature.node.kubernetes.io/system-os_release.ID":"u","feature.node.kubernetes.io/system-os_release.VERSION_ID":"1","feature.node.kubernetes.io/kernel-version.full":"k"},"containers":[{"name":"rbln-driver-container"},7]},"nodeSelector":3},"updateStrategy":"x"}}`)
	f.Add(0, "DELETE", "null")
	hooks := webhook.New(state([]*v1alpha1.RBLNDriver{wt.Driver("rbln-driver", nil)}, nil, wt.ClusterPolicy(false)), webhook.Options{})
	kinds := []metav1.GroupVersionKind{
		{Group: "rebellions.ai", Version: "v1alpha1", Kind: "RBLNDriver"},
		{Group: "rebellions.ai", Version: "v1alpha1", Kind: "RBLNClusterPolicy"},
		{Group: "apps", Version: "v1", Kind: "DaemonSet"},
	}
	f.Fuzz(func(t *testing.T, which int, op string, obj string) {
		if which < 0 {
			which = -which
		}
		which %= len(allPaths)
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "u", Kind: kinds[which], Operation: admissionv1.Operation(op),
			Object: runtime.RawExtension{Raw: []byte(obj)}, OldObject: runtime.RawExtension{Raw: []byte(obj)},
		}}
		h := hooks.Webhook(allPaths[which]).WithRecoverPanic(false)
		resp := h.Handle(context.Background(), req)
		if resp.Result != nil && resp.Result.Code >= 500 {
			t.Fatalf("5xx for %q: %+v", obj, resp.Result)
		}
		if resp.Allowed && len(resp.Patches) > 0 {
			var buf bytes.Buffer
			if err := json.Compact(&buf, []byte(obj)); err != nil {
				t.Fatalf("patched an object that is not JSON: %q", obj)
			}
		}
	})
}
