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
	// Denials are the failed rules, built-in ones first.
	Denials []decision.Finding
}

// Error lists every problem on one line.
func (r *Rejection) Error() string {
	parts := make([]string, len(r.Denials))
	for i, f := range r.Denials {
		parts[i] = f.String()
	}
	return fmt.Sprintf("%s %q is denied: %s", r.Kind, r.Name, strings.Join(parts, "; "))
}

// Status implements apierrors.APIStatus.
func (r *Rejection) Status() metav1.Status {
	st := metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusForbidden,
		Reason:  metav1.StatusReasonForbidden,
		Message: r.Error(),
		Details: &metav1.StatusDetails{Name: r.Name, Group: r.Group, Kind: r.Kind},
	}
	for _, f := range r.Denials {
		cause := metav1.StatusCause{Type: metav1.CauseType(f.Rule), Message: f.Message, Field: f.Field}
		if f.Rule == decision.RulePolicyDenied {
			cause.Field = "policy:" + f.Package
		} else {
			st.Code, st.Reason = http.StatusUnprocessableEntity, metav1.StatusReasonInvalid
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
			return v.WarningTexts(), unavailable("%v", u)
		}
		return nil, err
	}
	if !v.Allowed() {
		return v.WarningTexts(), &Rejection{Group: group, Kind: v.Kind, Name: v.Name, Denials: v.Denials}
	}
	return v.WarningTexts(), nil
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
func respond(warnings []string, err error) admission.Response {
	if err == nil {
		return admission.Allowed("").WithWarnings(warnings...)
	}
	var bad *BadRequestError
	if errors.As(err, &bad) {
		return admission.Errored(http.StatusBadRequest, err).WithWarnings(warnings...)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		st := status.Status()
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &st}}.WithWarnings(warnings...)
	}
	return admission.Denied(err.Error()).WithWarnings(warnings...)
}
