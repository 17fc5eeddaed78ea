package serve

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/policy"
)

// TestPolicyStatusEndpoint: /policyz reports the active policy set, and a failed reload with
// file and line as 503, without touching readiness.
func TestPolicyStatusEndpoint(t *testing.T) {
	assert.Nil(t, statusHandlers(Options{}), "no endpoint without a policy engine")

	st := policy.Status{Generation: 3, Policies: []string{"driverguard.team"}}
	h := statusHandlers(Options{PolicyStatus: func() policy.Status { return st }})["/policyz"]
	require.NotNil(t, h)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/policyz", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	var got policy.Status
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	assert.EqualValues(t, 3, got.Generation)

	st.Error = &policy.LoadError{Problems: []policy.Problem{{File: "team.rego", Line: 7, Message: "rego_parse_error"}}}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/policyz", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), `"file":"team.rego"`)
	assert.Contains(t, rec.Body.String(), `"line":7`)
}
