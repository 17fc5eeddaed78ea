package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

const reviewData = "../../../test/testdata/review"

func reviewArgs(file string) []string {
	return []string{"review", "-f", file,
		"--drivers", filepath.Join(reviewData, "drivers.yaml"),
		"--nodes", filepath.Join(reviewData, "nodes.yaml"),
		"--cluster-policy", filepath.Join(reviewData, "cluster-policy.yaml")}
}

// TestReviewSharedCases answers every shared request (test/testdata/review) with the files'
// cluster state; test/e2e asserts that the served webhook gives the same answers.
func TestReviewSharedCases(t *testing.T) {
	cases, err := wt.ReviewCases(reviewData)
	require.NoError(t, err)
	require.NotEmpty(t, cases)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			r := run(t, "", reviewArgs(c.File)...)
			expect := c.Expect.Offline()
			want := ExitOK
			switch {
			case !expect.Allowed && expect.Code == 400:
				want = ExitUsage
			case !expect.Allowed:
				want = ExitInvalid
			}
			assert.Equal(t, want, r.code, r.stderr)
			assert.Empty(t, r.stderr)
			var review admissionv1.AdmissionReview
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &review))
			assert.Equal(t, "AdmissionReview", review.Kind)
			require.NotNil(t, review.Request, "the request is printed back")
			require.NotNil(t, review.Response)
			assert.Equal(t, review.Request.UID, review.Response.UID)
			assert.NoError(t, expect.Check(review.Response))
		})
	}
}

func TestReviewStdinAndUsageErrors(t *testing.T) {
	body, err := os.ReadFile(filepath.Join(reviewData, "requests", "driver-create-identical.json"))
	require.NoError(t, err)
	r := run(t, string(body), "review", "-f", "-", "--drivers", filepath.Join(reviewData, "drivers.yaml"))
	assert.Equal(t, ExitInvalid, r.code, r.stderr)

	// Without cluster state nothing conflicts.
	r = run(t, string(body), "review", "-f", "-")
	assert.Equal(t, ExitOK, r.code, r.stderr)

	dir := t.TempDir()
	notReview := filepath.Join(dir, "pod.json")
	require.NoError(t, os.WriteFile(notReview, []byte(`{"apiVersion":"v1","kind":"Pod"}`), 0o600))
	for name, args := range map[string][]string{
		"no -f":          {"review"},
		"missing file":   {"review", "-f", filepath.Join(dir, "nope.json")},
		"not a review":   {"review", "-f", notReview},
		"two stdins":     {"review", "-f", "-", "--nodes", "-"},
		"bad nodes file": {"review", "-f", notReview, "--nodes", notReview},
	} {
		r := run(t, "", args...)
		assert.Equal(t, ExitUsage, r.code, "%s: %s", name, r.stderr)
		assert.NotEmpty(t, r.stderr, name)
	}
}
