package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/driverguard/driverguard/policy"
)

// Rejection is the decision to reject an object: every problem found, each naming the field,
// the rule and the fix. It implements apierrors.APIStatus, so the API server reports it with
// its causes (422 Invalid when a built-in rule failed, 403 Forbidden when only policies
// denied).
type Rejection struct {
	// Group, Kind and Name identify the object, e.g. rebellions.ai RBLNDriver
	// "rbln-driver-canary".
	Group string
	Kind  string
	Name  string
	// Errs are the failed built-in rules (syntax, selector conflicts, DaemonSet requirements).
	Errs field.ErrorList
	// Policy are the deny messages of OPA policies.
	Policy []policy.Message
}

// Error lists every problem on one line.
func (r *Rejection) Error() string {
	parts := make([]string, 0, len(r.Errs)+len(r.Policy))
	for _, e := range r.Errs {
		parts = append(parts, e.Error())
	}
	for _, m := range r.Policy {
		parts = append(parts, policyText(m))
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
	if len(r.Errs) > 0 {
		st.Code, st.Reason = http.StatusUnprocessableEntity, metav1.StatusReasonInvalid
	}
	for _, e := range r.Errs {
		st.Details.Causes = append(st.Details.Causes, metav1.StatusCause{
			Type: metav1.CauseType(e.Type), Message: e.ErrorBody(), Field: e.Field,
		})
	}
	for _, m := range r.Policy {
		st.Details.Causes = append(st.Details.Causes, metav1.StatusCause{
			Type: "PolicyDenied", Message: m.Msg, Field: "policy:" + m.Package,
		})
	}
	return st
}

func policyText(m policy.Message) string {
	if m.Package == "" {
		return "policy: " + m.Msg
	}
	return "policy " + m.Package + ": " + m.Msg
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
