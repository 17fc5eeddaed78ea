package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/decision"
)

// Bounds of an admission response, far below the API server's limits, whatever the object
// held: the message lists the findings up to maxMessageBytes, the causes take up to
// maxCausesBytes, the warnings up to maxWarningsBytes; what does not fit is counted.
const (
	maxNameBytes     = 253
	maxMessageBytes  = 4 << 10
	maxCausesBytes   = 24 << 10
	maxWarningsBytes = 16 << 10
)

// response is the one place where a decision becomes an admission response. group is the
// object's API group; v the verdict (nil when there is none), err why there is none:
//
//   - a verdict that allows: allowed, with its warnings;
//   - a verdict that denies: 422 Invalid when a built-in rule failed, 403 Forbidden when only
//     policies denied, every denial a cause typed by its rule (denied);
//   - a *decision.UnavailableError (policies failed, fail-closed) or the 503 of a cluster view
//     that is not ready: 503, so clients know a retry may succeed;
//   - a *BadRequestError: 400 (the request could not be read);
//   - any other error: 403 with its message.
//
// The verdict's warnings come with every answer but a failed one; the message is cut to
// maxMessageBytes whatever produced it (a decode error may quote input).
func response(group string, v *decision.Verdict, err error) admission.Response {
	var resp admission.Response
	var bad *BadRequestError
	var down *decision.UnavailableError
	var status apierrors.APIStatus
	switch {
	case errors.As(err, &bad):
		resp = admission.Errored(http.StatusBadRequest, err)
	case errors.As(err, &down):
		resp = failed(apierrors.NewServiceUnavailable(down.Error()).Status())
	case errors.As(err, &status):
		resp = failed(status.Status())
		v = nil
	case err != nil:
		resp, v = admission.Denied(err.Error()), nil
	case v == nil || v.Allowed():
		resp = admission.Allowed("")
	default:
		resp = failed(denied(group, v))
	}
	if r := resp.Result; r != nil {
		r.Message = validation.Truncate(r.Message, maxMessageBytes)
	}
	if v == nil {
		return resp
	}
	return resp.WithWarnings(v.BoundedWarningTexts(maxWarningsBytes)...)
}

func failed(st metav1.Status) admission.Response {
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &st}}
}

// denied is the status of a verdict that denies: every failed rule with its field, rule and
// fix, policy deny messages included (422 Invalid when a built-in rule failed, 403 Forbidden
// when only policies denied). The message lists them on one line (within maxMessageBytes,
// then how many more); the causes, typed by rule, take up to maxCausesBytes.
func denied(group string, v *decision.Verdict) metav1.Status {
	st := metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusForbidden,
		Reason:  metav1.StatusReasonForbidden,
		Message: denialMessage(v),
		// A name is at most 253 characters when valid; one sent to the webhook directly may be
		// anything.
		Details: &metav1.StatusDetails{Name: validation.Truncate(v.Name, maxNameBytes), Group: group, Kind: v.Kind},
	}
	size := 0
	for _, f := range v.Denials {
		cause := metav1.StatusCause{Type: metav1.CauseType(f.Rule), Message: f.Message, Field: f.Field}
		if pkg := f.Policy(); pkg != "" {
			cause.Type, cause.Field = decision.PolicyDeniedCause, "policy:"+pkg
		} else {
			st.Code, st.Reason = http.StatusUnprocessableEntity, metav1.StatusReasonInvalid
		}
		if size += len(cause.Type) + len(cause.Message) + len(cause.Field); size > maxCausesBytes {
			continue // the status code still counts it; the message says how many more
		}
		st.Details.Causes = append(st.Details.Causes, cause)
	}
	return st
}

// denialMessage lists the denials on one line: `<Kind> "<name>" is denied: <finding>; ...`.
func denialMessage(v *decision.Verdict) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q is denied: ", v.Kind, validation.Truncate(v.Name, validation.MaxQuotedValue))
	for i, f := range v.Denials {
		part := f.Text()
		if i > 0 && b.Len()+len(part)+2 > maxMessageBytes-64 { // room for the count
			fmt.Fprintf(&b, "; and %d more", len(v.Denials)-i+v.OmittedDenials)
			return b.String()
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(part)
	}
	if v.OmittedDenials > 0 {
		fmt.Fprintf(&b, "; and %d more", v.OmittedDenials)
	}
	return b.String()
}

// BadRequestError marks an admission request the webhook cannot read (no object, not JSON,
// the wrong kind). It is answered with 400 Bad Request, never with a panic or a 500.
type BadRequestError struct {
	// Msg says what is wrong and how to fix it.
	Msg string
	// Err is the underlying decode error, if any.
	Err error
}

func (e *BadRequestError) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *BadRequestError) Unwrap() error { return e.Err }

func badRequest(err error, format string, args ...any) error {
	return &BadRequestError{Msg: fmt.Sprintf(format, args...), Err: err}
}
