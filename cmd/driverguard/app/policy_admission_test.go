package app

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/driverguard/driverguard/api/decode"
	"github.com/driverguard/driverguard/api/v1alpha1"
	"github.com/driverguard/driverguard/cluster"
	"github.com/driverguard/driverguard/policy"
	"github.com/driverguard/driverguard/webhook"
	wt "github.com/driverguard/driverguard/webhook/webhooktest"
)

// prereleaseDenial is what docs/examples/policy says about a pre-release outside canary nodes.
const prereleaseDenial = `RBLNDriver/rbln-driver-rebel: version "3.3.0-rc1" is a pre-release, and pre-releases run only on canary nodes`

// TestCustomPolicyAtRenderAndAdmission: one case — rbln-driver-rebel moved to 3.3.0-rc1 — and
// one policy directory (docs/examples/policy) change the answers of `check`, of `review`, and
// of the served webhook alike; editing the watched directory changes the served answer
// without a restart.
func TestCustomPolicyAtRenderAndAdmission(t *testing.T) {
	dir := t.TempDir()
	values := []string{"-f", exampleValues, "--set", "driver.instances.rebel.image.tag=3.3.0-rc1"}

	// check
	c := run(t, "", append([]string{"check"}, values...)...)
	assert.Equal(t, ExitOK, c.code, c.stdout)
	c = run(t, "", append([]string{"check", "--policy", examplePolicy}, values...)...)
	assert.Equal(t, ExitInvalid, c.code, c.stdout)
	assert.Contains(t, c.stdout, "  FAIL  driverguard.platform: "+strings.TrimPrefix(prereleaseDenial, "RBLNDriver/rbln-driver-rebel: "))

	// The same objects at admission: the rendered drivers are the cluster, and the request
	// creates rbln-driver-rebel.
	rendered := run(t, "", append([]string{"render"}, values...)...)
	require.Equal(t, ExitOK, rendered.code, rendered.stderr)
	driversFile := filepath.Join(dir, "drivers.yaml")
	require.NoError(t, os.WriteFile(driversFile, []byte(rendered.stdout), 0o600))
	docs, err := decode.File(driversFile, nil)
	require.NoError(t, err)
	drivers, err := decode.Drivers(docs)
	require.NoError(t, err)
	var rebel *v1alpha1.RBLNDriver
	for i := range drivers {
		if drivers[i].Name == "rbln-driver-rebel" {
			rebel = &drivers[i]
		}
	}
	require.NotNil(t, rebel)
	body := wt.MustJSON(wt.Review(wt.Request(admissionv1.Create, rebel, nil)))
	requestFile := filepath.Join(dir, "request.json")
	require.NoError(t, os.WriteFile(requestFile, body, 0o600))

	// review
	r := run(t, "", "review", "-f", requestFile, "--drivers", driversFile)
	assert.Equal(t, ExitOK, r.code, r.stdout)
	r = run(t, "", "review", "-f", requestFile, "--drivers", driversFile, "--policy", examplePolicy)
	assert.Equal(t, ExitInvalid, r.code, r.stdout)
	var reviewed admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &reviewed))
	assert.Contains(t, reviewed.Response.Result.Message, prereleaseDenial)

	// the served webhook: the handlers serve registers, over HTTP, with a watching engine on a
	// copy of the example directory
	policies := filepath.Join(dir, "policies")
	require.NoError(t, os.CopyFS(policies, os.DirFS(examplePolicy)))
	engine, err := policy.New(t.Context(), policy.Options{Dirs: []string{policies}, Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	go func() { _ = engine.Start(t.Context()) }()
	state := cluster.NewStatic(cluster.FromLists(nil, drivers, nil, nil))
	mux := http.NewServeMux()
	for path, h := range webhook.New(state, webhook.Options{Policy: engine}).Handlers() {
		mux.Handle(path, h)
	}
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	served := func() *admissionv1.AdmissionResponse {
		resp, err := srv.Client().Post(srv.URL+webhook.PathValidateDriver, "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var review admissionv1.AdmissionReview
		require.NoError(t, json.Unmarshal(raw, &review), string(raw))
		require.NotNil(t, review.Response)
		return review.Response
	}
	got := served()
	assert.False(t, got.Allowed)
	assert.Equal(t, reviewed.Response.Result.Message, got.Result.Message, "review answers as the served webhook does")

	// Edit the watched directory: allow pre-releases on rebel nodes too.
	file := filepath.Join(policies, "platform.rego")
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, bytes.Replace(src, []byte(`!= "canary"`), []byte(`== "never"`), 1), 0o600))
	require.Eventually(t, func() bool { return served().Allowed }, 10*time.Second, 20*time.Millisecond)
}
