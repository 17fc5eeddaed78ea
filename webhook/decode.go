package webhook

import (
	"reflect"

	jsonv2 "github.com/go-json-experiment/json"
	sigsjson "sigs.k8s.io/json"
)

// decodeJSON decodes JSON text into v (a pointer) by the API server's rules:
// sigs.k8s.io/json's case-sensitive decoding, which decides every value and every error. It
// first tries encoding/json/v2's decoder (the go-json-experiment module), about three
// times faster on an AdmissionReview and its object (BenchmarkDecodeJSON) and, on the text it
// accepts, equal in result (TestDecodeJSONIsSigsJSON, FuzzDecodeJSON); what it refuses — a
// duplicate name, invalid UTF-8, a type mismatch, malformed text — is decoded again, from
// the zero value, by sigs.k8s.io/json, whose result or error stands. The types decoded here
// hold no interface values (where the two would differ: float64 against int64).
func decodeJSON(data []byte, v any) error {
	if jsonv2.Unmarshal(data, v) == nil {
		return nil
	}
	reflect.ValueOf(v).Elem().SetZero()
	return sigsjson.UnmarshalCaseSensitivePreserveInts(data, v)
}
