package webhook_test

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/api/v1alpha1"
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
