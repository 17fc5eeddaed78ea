package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"
)

// maxReviewBytes is the largest AdmissionReview read, as controller-runtime's (the API server
// sends at most about 3 MiB of object, twice for an UPDATE).
const maxReviewBytes = 7 << 20

// reviewHandler serves one admission.Webhook over HTTP as controller-runtime's ServeHTTP does
// (the same limits, errors and response), with a cheaper decode: the AdmissionReview is read in
// one pass of sigs.k8s.io/json (case-sensitive, integers preserved: what the API machinery's
// JSON serializer does underneath) instead of the universal deserializer, which first parses
// the whole body once more just to find its apiVersion and kind. The webhook's Handle — panic
// recovery, the response's UID, warnings — is controller-runtime's.
type reviewHandler struct {
	hook *admission.Webhook
}

// review is an AdmissionReview of either version: v1 and v1beta1 have the same fields.
type review struct {
	APIVersion string                         `json:"apiVersion"`
	Kind       string                         `json:"kind"`
	Request    *admissionv1.AdmissionRequest  `json:"request,omitempty"`
	Response   *admissionv1.AdmissionResponse `json:"response,omitempty"`
}

func (h *reviewHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		h.write(w, "", admission.Errored(http.StatusBadRequest, errors.New("request body is empty")))
		return
	}
	defer r.Body.Close()
	limited := &io.LimitedReader{R: r.Body, N: maxReviewBytes}
	body, err := io.ReadAll(limited)
	if err != nil {
		h.write(w, "", admission.Errored(http.StatusBadRequest, err))
		return
	}
	if limited.N <= 0 {
		h.write(w, "", admission.Errored(http.StatusRequestEntityTooLarge, fmt.Errorf("request entity is too large; limit is %d bytes", maxReviewBytes)))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		h.write(w, "", admission.Errored(http.StatusBadRequest, fmt.Errorf("contentType=%s, expected application/json", ct)))
		return
	}
	req := admission.Request{}
	ar := review{Request: &req.AdmissionRequest}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &ar); err != nil {
		h.write(w, "", admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the AdmissionReview: %w", err)))
		return
	}
	switch {
	case ar.Kind != "AdmissionReview":
		h.write(w, "", admission.Errored(http.StatusBadRequest, fmt.Errorf("kind is %q, expected AdmissionReview", ar.Kind)))
		return
	case ar.APIVersion != admissionv1.SchemeGroupVersion.String() && ar.APIVersion != admissionv1beta1.SchemeGroupVersion.String():
		h.write(w, "", admission.Errored(http.StatusBadRequest, fmt.Errorf("apiVersion is %q, expected %s or %s", ar.APIVersion,
			admissionv1.SchemeGroupVersion, admissionv1beta1.SchemeGroupVersion)))
		return
	}
	h.write(w, ar.APIVersion, h.hook.Handle(r.Context(), req))
}

// write answers with an AdmissionReview of apiVersion (v1 when "") holding resp.
func (h *reviewHandler) write(w http.ResponseWriter, apiVersion string, resp admission.Response) {
	if apiVersion == "" {
		apiVersion = admissionv1.SchemeGroupVersion.String()
	}
	w.Header().Set("Content-Type", "application/json")
	// A plain struct always encodes; an error here is the connection failing, with no one left
	// to answer.
	_ = json.NewEncoder(w).Encode(review{APIVersion: apiVersion, Kind: "AdmissionReview", Response: &resp.AdmissionResponse})
}
