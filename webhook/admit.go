package webhook

import (
	"context"
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/decision"
)

// Answer is the decision on one admission request: the response, and the verdict it words —
// its findings as the decision made them (nil when nothing was judged: DELETE or CONNECT, a
// DaemonSet that is not the operator's, a request that could not be read, a decision that
// could not be made).
type Answer struct {
	Response admission.Response
	Verdict  *decision.Verdict
}

// admitter is one path's typed decision: the request decoded, then decided.
type admitter interface {
	admit(ctx context.Context, req *admission.Request) Answer
}

// Admit decides one decoded admission request — an RBLNDriver, an RBLNClusterPolicy or a
// DaemonSet, chosen by request.kind — and returns the response with the verdict it words. It is
// the one entry point: the HTTP handler `serve` runs is an adapter over it, and `review` and
// `test` call it directly. Like controller-runtime's admission.Webhook it never panics (a panic
// is answered 500), and the response is completed as it completes one: the request's UID, a
// status code, the patch encoded.
func (w *Webhooks) Admit(ctx context.Context, req admission.Request) (a Answer) {
	defer func() {
		if r := recover(); r != nil {
			a = Answer{Response: admission.Errored(http.StatusInternalServerError, fmt.Errorf("panic: %v [recovered]", r))}
		}
		a.Response.UID = req.UID
	}()
	h, ok := w.admitters[PathFor(req.Kind.Group, req.Kind.Kind)]
	if !ok {
		return Answer{Response: response("", nil, badRequest(nil, "request.kind %s is not handled by driverguard (RBLNDriver, RBLNClusterPolicy and DaemonSet are)", formatGVK(req.Kind)))}
	}
	a = h.admit(ctx, &req)
	// as controller-runtime's Webhook completes it: the status code, the patch encoded
	if err := a.Response.Complete(req); err != nil {
		return Answer{Response: admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding the response: %w", err))}
	}
	return a
}

// handlerOf is the admission.Handler of one path: the typed decision's response.
func handlerOf(a admitter) admission.Handler {
	return admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		return a.admit(ctx, &req).Response
	})
}
