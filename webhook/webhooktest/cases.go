package webhooktest

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/yaml"
)

// ReviewCase is one shared AdmissionReview with its expected answer (test/testdata/review).
type ReviewCase struct {
	Name   string
	File   string // requests/<name>.json
	Expect Expect
}

// Expect is the expected response of a ReviewCase.
type Expect struct {
	Allowed bool `json:"allowed"`
	// Code is the status code of a denial (422, 403, 400); 0 means 200 when allowed.
	Code int32 `json:"code"`
	// Message, Warnings and Patch list substrings of the status message, of some warning,
	// and of the decoded JSON patch. No Patch means an empty patch.
	Message  []string `json:"message"`
	Warnings []string `json:"warnings"`
	Patch    []string `json:"patch"`
	// APIServer, when set, is the answer of the API server's own CRD validation, which refuses
	// the request before any webhook sees it: `driverguard review` gives it, and the served
	// webhook, which a real API server never sends such a request, answers the rest.
	APIServer *Expect `json:"apiServer,omitempty"`
}

// Offline is what `driverguard review` answers: the API server's refusal when there is one.
func (e Expect) Offline() Expect {
	if e.APIServer != nil {
		return *e.APIServer
	}
	return e
}

// ReviewCases reads dir/expect.yaml and the matching dir/requests/*.json.
func ReviewCases(dir string) ([]ReviewCase, error) {
	data, err := os.ReadFile(filepath.Join(dir, "expect.yaml"))
	if err != nil {
		return nil, err
	}
	var expect map[string]Expect
	if err := yaml.UnmarshalStrict(data, &expect); err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "requests", "*.json"))
	if err != nil {
		return nil, err
	}
	var cases []ReviewCase
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		e, ok := expect[name]
		if !ok {
			return nil, fmt.Errorf("%s has no entry in expect.yaml", f)
		}
		delete(expect, name)
		cases = append(cases, ReviewCase{Name: name, File: f, Expect: e})
	}
	if len(expect) > 0 {
		return nil, fmt.Errorf("expect.yaml has entries without a request file: %v", slices.Sorted(maps.Keys(expect)))
	}
	return cases, nil
}

// Check compares a response with the expectation.
func (e Expect) Check(r *admissionv1.AdmissionResponse) error {
	if r == nil {
		return errors.New("no response")
	}
	var errs []error
	msg := ""
	code := int32(0)
	if r.Result != nil {
		msg, code = r.Result.Message, r.Result.Code
	}
	if r.Allowed != e.Allowed {
		errs = append(errs, fmt.Errorf("allowed = %v, want %v (message %q)", r.Allowed, e.Allowed, msg))
	}
	if !e.Allowed && code != e.Code {
		errs = append(errs, fmt.Errorf("code = %d, want %d", code, e.Code))
	}
	for _, m := range e.Message {
		if !strings.Contains(msg, m) {
			errs = append(errs, fmt.Errorf("message %q does not contain %q", msg, m))
		}
	}
	for _, w := range e.Warnings {
		if !slices.ContainsFunc(r.Warnings, func(got string) bool { return strings.Contains(got, w) }) {
			errs = append(errs, fmt.Errorf("no warning contains %q: %q", w, r.Warnings))
		}
	}
	if len(e.Warnings) == 0 && len(r.Warnings) > 0 {
		errs = append(errs, fmt.Errorf("unexpected warnings %q", r.Warnings))
	}
	patch := string(r.Patch)
	if len(e.Patch) == 0 && len(r.Patch) > 0 {
		errs = append(errs, fmt.Errorf("unexpected patch %s", patch))
	}
	for _, p := range e.Patch {
		if !strings.Contains(patch, p) {
			errs = append(errs, fmt.Errorf("patch %s does not contain %q", patch, p))
		}
	}
	return errors.Join(errs...)
}
