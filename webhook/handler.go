package webhook

import (
	"context"
	"reflect"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"github.com/driverguard/driverguard/api/validation"
)

// The handlers below translate an admission.Request into typed objects and call a decision
// function; respond turns the decision into the response. Transport (body limit, content type,
// AdmissionReview decoding, panic recovery, the response UID) is controller-runtime's
// admission.Webhook.

// validator is the decision side of a validating webhook for objects of type T.
type validator[T any] interface {
	ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error)
	ValidateUpdate(ctx context.Context, oldObj, newObj T) (admission.Warnings, error)
}

// validatingHandler decodes RBLNDriver or RBLNClusterPolicy requests for a validator.
type validatingHandler[T any] struct {
	gvk       schema.GroupVersionKind
	validator validator[T]
}

// Handle implements admission.Handler.
func (h *validatingHandler[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	ctx = admission.NewContextWithRequest(ctx, req)
	return respond(h.decide(ctx, req))
}

func (h *validatingHandler[T]) decide(ctx context.Context, req admission.Request) (admission.Warnings, error) {
	if err := checkKind(req, h.gvk); err != nil {
		return nil, err
	}
	switch req.Operation {
	case admissionv1.Create:
		obj, err := decodeObject[T](req.Object, "request.object", h.gvk)
		if err != nil {
			return nil, err
		}
		return h.validator.ValidateCreate(ctx, obj)
	case admissionv1.Update:
		obj, err := decodeObject[T](req.Object, "request.object", h.gvk)
		if err != nil {
			return nil, err
		}
		old, err := decodeObject[T](req.OldObject, "request.oldObject", h.gvk)
		if err != nil {
			return nil, err
		}
		return h.validator.ValidateUpdate(ctx, old, obj)
	case admissionv1.Delete, admissionv1.Connect:
		return nil, nil // nothing to validate; the webhook configurations do not send these
	default:
		return nil, badRequest(nil, "request.operation %q is not one of CREATE, UPDATE, DELETE, CONNECT", req.Operation)
	}
}

// checkKind rejects requests for another kind than the handler's: a misconfigured webhook
// (rules pointing the wrong resource at this path) must not be silently allowed.
func checkKind(req admission.Request, want schema.GroupVersionKind) error {
	got := req.Kind
	if got.Group != want.Group || got.Kind != want.Kind {
		return badRequest(nil, "request.kind is %s, but this webhook path handles %s: point the webhook configuration's rules for %s at its own path",
			formatGVK(got), formatGVK(metav1.GroupVersionKind(want)), formatGVK(got))
	}
	return nil
}

// formatGVK is gvk as a message quotes it: group/version/kind, each part cut to
// validation.MaxQuotedValue bytes with its length (a request's kind is what the client sent).
func formatGVK(gvk metav1.GroupVersionKind) string {
	quote := func(s string) string { return validation.Truncate(s, validation.MaxQuotedValue) }
	switch {
	case gvk.Kind == "":
		return "empty"
	case gvk.Group == "":
		return quote(gvk.Version) + "/" + quote(gvk.Kind)
	}
	return quote(gvk.Group) + "/" + quote(gvk.Version) + "/" + quote(gvk.Kind)
}

// decodeObject decodes one object of an admission request with the API server's JSON rules
// (case-sensitive field names) in one pass, then checks its kind. Unknown fields are ignored,
// as the API server has already pruned them. It never panics; every failure is a
// *BadRequestError naming the field.
func decodeObject[T any](raw runtime.RawExtension, fieldName string, gvk schema.GroupVersionKind) (T, error) {
	var obj T
	if len(raw.Raw) == 0 {
		return obj, badRequest(nil, "%s is empty: the request must carry the %s as JSON", fieldName, gvk.Kind)
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw.Raw, &obj); err != nil {
		// Say why: not an object at all, an object of another kind, or a bad field.
		var tm metav1.TypeMeta
		if terr := sigsjson.UnmarshalCaseSensitivePreserveInts(raw.Raw, &tm); terr != nil {
			return obj, badRequest(terr, "%s is not a JSON object (expected a %s %s)", fieldName, gvk.GroupVersion(), gvk.Kind)
		}
		if err := checkTypeMeta(tm, fieldName, gvk); err != nil {
			return obj, err
		}
		return obj, badRequest(err, "%s is not a valid %s %s", fieldName, gvk.GroupVersion(), gvk.Kind)
	}
	k, ok := any(obj).(interface{ GetObjectKind() schema.ObjectKind })
	if !ok {
		k, ok = any(&obj).(interface{ GetObjectKind() schema.ObjectKind })
	}
	if !ok || reflect.ValueOf(k).IsNil() {
		return obj, badRequest(nil, "%s is null: the request must carry the %s as a JSON object", fieldName, gvk.Kind)
	}
	gv := k.GetObjectKind().GroupVersionKind()
	return obj, checkTypeMeta(metav1.TypeMeta{Kind: gv.Kind, APIVersion: gv.GroupVersion().String()}, fieldName, gvk)
}

// checkTypeMeta rejects an object whose kind or group (when given) is not gvk's.
func checkTypeMeta(tm metav1.TypeMeta, fieldName string, gvk schema.GroupVersionKind) error {
	if tm.APIVersion == "/" { // empty group and version
		tm.APIVersion = ""
	}
	if (tm.Kind != "" && tm.Kind != gvk.Kind) || (tm.APIVersion != "" && tm.GroupVersionKind().Group != gvk.Group) {
		return badRequest(nil, "%s is a %s %s, expected a %s %s", fieldName, tm.APIVersion, tm.Kind, gvk.GroupVersion(), gvk.Kind)
	}
	return nil
}
