package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/decision"
)

// Rejection is the decision to reject an object: every failed rule with its field, rule and
// fix, policy deny messages included. It implements apierrors.APIStatus, so the API server
// reports it with its causes (422 Invalid when a built-in rule failed, 403 Forbidden when only
// policies denied); each cause's type is the finding's rule.
type Rejection struct {
	// Group, Kind and Name identify the object, e.g. rebellions.ai RBLNDriver
	// "rbln-driver-canary".
	Group string
	Kind  string
	Name  string
	// Denials are the failed rules, built-in ones first; Omitted counts those beyond them.
	Denials []decision.Finding
	Omitted int
}

// Bounds of an admission response, far below the API server's limits, whatever the object
// held: the message lists the findings up to maxMessageBytes, the causes take up to
// maxCausesBytes, the warnings up to maxWarningsBytes; what does not fit is counted.
const (
	maxNameBytes     = 253
	maxMessageBytes  = 4 << 10
	maxCausesBytes   = 24 << 10
	maxWarningsBytes = 16 << 10
)

// Error lists the problems on one line (within maxMessageBytes, then how many more).
func (r *Rejection) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q is denied: ", r.Kind, validation.Truncate(r.Name, validation.MaxQuotedValue))
	for i, f := range r.Denials {
		part := f.String()
		if i > 0 && b.Len()+len(part)+2 > maxMessageBytes-64 { // room for the count
			fmt.Fprintf(&b, "; and %d more", len(r.Denials)-i+r.Omitted)
			return b.String()
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(part)
	}
	if r.Omitted > 0 {
		fmt.Fprintf(&b, "; and %d more", r.Omitted)
	}
	return b.String()
}

// Status implements apierrors.APIStatus.
func (r *Rejection) Status() metav1.Status {
	st := metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusForbidden,
		Reason:  metav1.StatusReasonForbidden,
		Message: r.Error(),
		// A name is at most 253 characters when valid; one sent to the webhook directly may be
		// anything.
		Details: &metav1.StatusDetails{Name: validation.Truncate(r.Name, maxNameBytes), Group: r.Group, Kind: r.Kind},
	}
	size := 0
	for _, f := range r.Denials {
		cause := metav1.StatusCause{Type: metav1.CauseType(f.Rule), Message: f.Message, Field: f.Field}
		if f.Rule == decision.RulePolicyDenied {
			cause.Field = "policy:" + f.Package
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

// outcome turns a verdict into what an admission.Validator returns: the warnings, and a
// *Rejection when the object is denied; a decision that could not be made (policies failed,
// fail-closed) is a 503.
func outcome(group string, v *decision.Verdict, err error) (admission.Warnings, error) {
	if err != nil {
		var u *decision.UnavailableError
		if errors.As(err, &u) {
			return v.BoundedWarningTexts(maxWarningsBytes), unavailable("%v", u)
		}
		return nil, err
	}
	if !v.Allowed() {
		return v.BoundedWarningTexts(maxWarningsBytes), &Rejection{Group: group, Kind: v.Kind, Name: v.Name, Denials: v.Denials, Omitted: v.OmittedDenials}
	}
	return v.BoundedWarningTexts(maxWarningsBytes), nil
}

// withRequest fills in what the admission request in ctx adds to a decision: the objects as
// received (policies read them as sent) and the user.
func withRequest(ctx context.Context, raw, oldRaw *json.RawMessage, user **authenticationv1.UserInfo) {
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return
	}
	*raw = req.Object.Raw
	if len(req.OldObject.Raw) > 0 && !bytes.Equal(req.OldObject.Raw, []byte("null")) {
		*oldRaw = req.OldObject.Raw
	}
	u := req.UserInfo
	*user = &u
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

// unavailable is a temporary failure (cluster view not synced, policy evaluation failed while
// fail-closed): 503, so clients know a retry may succeed.
func unavailable(format string, args ...any) error {
	return apierrors.NewServiceUnavailable(fmt.Sprintf(format, args...))
}

// respond is the one place where a decision becomes an admission response:
//
//   - no error: allowed, with the warnings;
//   - *BadRequestError: 400 (the request could not be read);
//   - an apierrors.APIStatus (a *Rejection, 503 unavailable): that status, not allowed;
//   - anything else: denied (403) with the error's message.
//
// Warnings are attached in every case, so a denial still shows what else was found.
//
// The message is cut to maxMessageBytes whatever produced it (a decode error may quote input).
func respond(warnings []string, err error) admission.Response {
	var resp admission.Response
	var bad *BadRequestError
	var status apierrors.APIStatus
	switch {
	case err == nil:
		resp = admission.Allowed("")
	case errors.As(err, &bad):
		resp = admission.Errored(http.StatusBadRequest, err)
	case errors.As(err, &status):
		st := status.Status()
		resp = admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &st}}
	default:
		resp = admission.Denied(err.Error())
	}
	if r := resp.Result; r != nil {
		r.Message = validation.Truncate(r.Message, maxMessageBytes)
	}
	return resp.WithWarnings(warnings...)
}
