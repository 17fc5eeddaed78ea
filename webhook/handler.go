package webhook

import (
	"bytes"
	"context"
	"reflect"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/decision"
	"github.com/driverguard/driverguard/policy"
)

// validating is the admission handler of RBLNDrivers or RBLNClusterPolicies: it decodes the
// AdmissionRequest once into the decision's request and answers with the verdict.
type validating[T any] struct {
	gvk    schema.GroupVersionKind
	decide func(context.Context, decision.Request[T]) (*decision.Verdict, error)
}

// admit decodes the request and decides it.
func (h *validating[T]) admit(ctx context.Context, ar *admission.Request) Answer {
	req, err := decisionRequest[T](ar, h.gvk)
	if err != nil || req == nil {
		return Answer{Response: response(h.gvk.Group, nil, err)}
	}
	v, err := h.decide(ctx, *req)
	return Answer{Response: response(h.gvk.Group, v, err), Verdict: v}
}

// decisionRequest decodes an admission request into the decision's request: the typed
// objects, their JSON as received (policies read it as sent), the operation and the user. It
// returns nil for DELETE and CONNECT (nothing to decide; the webhook configurations do not
// send them) and a *BadRequestError for a request it cannot read.
func decisionRequest[T any](ar *admission.Request, gvk schema.GroupVersionKind) (*decision.Request[T], error) {
	if err := checkKind(ar, gvk); err != nil {
		return nil, err
	}
	switch ar.Operation {
	case admissionv1.Create, admissionv1.Update:
	case admissionv1.Delete, admissionv1.Connect:
		return nil, nil
	default:
		return nil, badRequest(nil, "request.operation %q is not one of CREATE, UPDATE, DELETE, CONNECT", ar.Operation)
	}
	req := &decision.Request[T]{Operation: string(ar.Operation), RawObject: ar.Object.Raw, Source: policy.SourceAdmission}
	var err error
	if req.Object, err = decodeObject[T](ar.Object, "request.object", gvk); err != nil {
		return nil, err
	}
	if ar.Operation == admissionv1.Update {
		if req.OldObject, err = decodeObject[T](ar.OldObject, "request.oldObject", gvk); err != nil {
			return nil, err
		}
	}
	if raw := ar.OldObject.Raw; len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		req.RawOldObject = raw
	}
	user := ar.UserInfo
	req.UserInfo = &user
	return req, nil
}

// checkKind rejects requests for another kind than the handler's: a misconfigured webhook
// (rules pointing the wrong resource at this path) must not be silently allowed.
func checkKind(req *admission.Request, want schema.GroupVersionKind) error {
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
	if err := decodeJSON(raw.Raw, &obj); err != nil {
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
