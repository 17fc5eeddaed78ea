package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"github.com/driverguard/driverguard/api/validation"
)

// MaxReviewBytes is the largest AdmissionReview read, as controller-runtime's (the API server
// sends at most about 3 MiB of object, twice for an UPDATE); `review` reads no more either.
const MaxReviewBytes = 7 << 20

// maxReviewValues bounds the JSON values (objects, arrays, strings, numbers, literals) of one
// AdmissionReview. Decoding and judging cost memory per value, not per byte: 7 MiB of "0,"
// would be 3.5 million values. A driver DaemonSet UPDATE with its managed fields holds about
// 2,000; an RBLNDriver a few hundred.
const maxReviewValues = 100_000

// valueBound is an upper bound of the JSON values in body: its commas and opening brackets,
// in strings or not — every value but the first of a container follows a comma, every
// container opens with a bracket. bytes.Count makes it nearly free.
func valueBound(body []byte) int {
	return bytes.Count(body, []byte{','}) + bytes.Count(body, []byte{'{'}) + bytes.Count(body, []byte{'['}) + 1
}

// countValues counts the JSON values of body exactly: the commas and opening brackets outside
// strings, in one pass without allocating.
func countValues(body []byte) int {
	n, inString := 1, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case inString:
			switch c {
			case '\\':
				i++ // the escaped character
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ',' || c == '[' || c == '{':
			n++
		}
	}
	return n
}

// reviewHandler serves one admission.Webhook over HTTP as controller-runtime's ServeHTTP does
// (the same limits, errors and response), with a cheaper decode: the AdmissionReview is read in
// one pass (decodeJSON: encoding/json/v2, and sigs.k8s.io/json — case-sensitive, integers
// preserved, what the API machinery's JSON serializer does underneath — for what v2 refuses)
// instead of the universal deserializer, which first parses the whole body once more just to
// find its apiVersion and kind. The webhook's Handle — panic
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
		h.write(w, identity{}, admission.Errored(http.StatusBadRequest, errors.New("request body is empty")))
		return
	}
	defer r.Body.Close()
	limited := &io.LimitedReader{R: r.Body, N: MaxReviewBytes}
	buf := bodyBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	defer putBodyBuffer(buf)                               // nothing decoded from the body keeps it: strings and raw objects are copies
	if n := r.ContentLength; n > 0 && n <= maxPooledBody { // a claimed length is not trusted beyond that
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(limited)
	body := buf.Bytes()
	t := ticketFrom(r.Context())
	if t != nil {
		t.bodyRead()
	}
	if err != nil {
		if t != nil && t.wasEvicted() {
			err = fmt.Errorf("the body did not arrive while other requests needed the room it held: %w", err)
		}
		h.write(w, identity{}, admission.Errored(http.StatusBadRequest, err))
		return
	}
	if limited.N <= 0 {
		w.Header().Set("Connection", "close") // the rest of the body is never read
		h.write(w, identity{}, admission.Errored(http.StatusRequestEntityTooLarge, fmt.Errorf("request entity is too large; limit is %d bytes", MaxReviewBytes)))
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		h.write(w, identity{}, admission.Errored(http.StatusBadRequest, fmt.Errorf("contentType=%s, expected application/json", validation.Truncate(ct, validation.MaxQuotedValue))))
		return
	}
	values := valueBound(body)
	if values > maxReviewValues {
		values = countValues(body) // commas in strings are not values
	}
	if values > maxReviewValues {
		refusedRequests.WithLabelValues("too_large").Inc()
		h.write(w, reviewIdentity(body), admission.Errored(http.StatusRequestEntityTooLarge, fmt.Errorf(
			"the AdmissionReview holds %d JSON values; driverguard reads at most %d (a driver object holds a few hundred): the object is far too large to be a driver configuration", values, maxReviewValues)))
		return
	}
	if t != nil && !t.addValues(values) {
		tooBusy(w, t.l.Limits)
		return
	}
	var ar review
	if err := decodeJSON(body, &ar); err != nil {
		h.write(w, identity{}, admission.Errored(http.StatusBadRequest, fmt.Errorf("decoding the AdmissionReview: %w", err)))
		return
	}
	req := admission.Request{}
	if ar.Request != nil {
		req.AdmissionRequest = *ar.Request
	}
	switch {
	case ar.Kind != "AdmissionReview":
		h.write(w, identity{UID: types.UID(validation.Truncate(string(req.UID), maxUIDBytes))}, admission.Errored(http.StatusBadRequest, fmt.Errorf("kind is %q, expected AdmissionReview", validation.Truncate(ar.Kind, validation.MaxQuotedValue))))
		return
	case ar.APIVersion != admissionv1.SchemeGroupVersion.String() && ar.APIVersion != admissionv1beta1.SchemeGroupVersion.String():
		h.write(w, identity{UID: types.UID(validation.Truncate(string(req.UID), maxUIDBytes))}, admission.Errored(http.StatusBadRequest, fmt.Errorf("apiVersion is %q, expected %s or %s", validation.Truncate(ar.APIVersion, validation.MaxQuotedValue),
			admissionv1.SchemeGroupVersion, admissionv1beta1.SchemeGroupVersion)))
		return
	}
	if len(req.UID) > maxUIDBytes {
		h.write(w, identity{APIVersion: ar.APIVersion, UID: types.UID(validation.Truncate(string(req.UID), maxUIDBytes))}, admission.Errored(http.StatusBadRequest,
			fmt.Errorf("request.uid is %d bytes; an API server's is 36 (at most %d are read)", len(req.UID), maxUIDBytes)))
		return
	}
	h.write(w, identity{APIVersion: ar.APIVersion}, h.hook.Handle(r.Context(), req))
}

// bodyBuffers hold request bodies between requests: reading each into a new slice grown from
// 512 bytes was a fifth of the bytes a request allocates.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody is the largest buffer kept for the next request: a rare large body (up to
// MaxReviewBytes) is left to the collector rather than held.
const maxPooledBody = 64 << 10

func putBodyBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBody {
		bodyBuffers.Put(b)
	}
}

// maxUIDBytes bounds the request UID an answer repeats: the API server's are 36 characters.
const maxUIDBytes = 128

// identity is what an answer must repeat of a request that is not read: its version and UID.
type identity struct {
	APIVersion string    `json:"apiVersion"`
	UID        types.UID `json:"uid"`
}

// reviewIdentity reads the apiVersion and request UID of an AdmissionReview without decoding
// the rest (skipped fields allocate nothing): the API server accepts only an answer that
// carries its request's UID.
func reviewIdentity(body []byte) identity {
	var r struct {
		APIVersion string `json:"apiVersion"`
		Request    struct {
			UID types.UID `json:"uid"`
		} `json:"request"`
	}
	_ = sigsjson.UnmarshalCaseSensitivePreserveInts(body, &r)
	id := identity{UID: types.UID(validation.Truncate(string(r.Request.UID), maxUIDBytes))}
	if r.APIVersion == admissionv1beta1.SchemeGroupVersion.String() {
		id.APIVersion = r.APIVersion
	}
	return id
}

// write answers with an AdmissionReview of the request's apiVersion (v1 when unknown) holding
// resp, with the request's UID when resp has none.
func (h *reviewHandler) write(w http.ResponseWriter, id identity, resp admission.Response) {
	apiVersion := id.APIVersion
	if apiVersion == "" {
		apiVersion = admissionv1.SchemeGroupVersion.String()
	}
	if resp.UID == "" {
		resp.UID = id.UID
	}
	if r := resp.Result; r != nil {
		r.Message = validation.Truncate(r.Message, maxMessageBytes) // it may quote what was sent
	}
	w.Header().Set("Content-Type", "application/json")
	// A plain struct always encodes; an error here is the connection failing, with no one left
	// to answer.
	_ = json.NewEncoder(w).Encode(review{APIVersion: apiVersion, Kind: "AdmissionReview", Response: &resp.AdmissionResponse})
}
