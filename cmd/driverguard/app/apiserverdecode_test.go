package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// typeErrorSpecs are RBLNDriver specs the API server's CRD validation refuses for a value of
// the wrong type (or none): the offline judges must refuse them too.
func typeErrorSpecs() map[string]any {
	spec := func(change map[string]any) map[string]any {
		s := map[string]any{"registry": "registry.example.com", "image": "rebellions/rbln-driver", "version": "3.2.2",
			"nodeSelector": map[string]any{"example.com/pool": "a"}}
		for k, v := range change {
			s[k] = v
		}
		return s
	}
	return map[string]any{
		"selector value null":     spec(map[string]any{"nodeSelector": map[string]any{"example.com/pool": nil}}),
		"selector value a number": spec(map[string]any{"nodeSelector": map[string]any{"example.com/pool": 1}}),
		"cpu limit 0.5":           spec(map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": 0.5}}}),
		"version 3.2":             spec(map[string]any{"version": 3.2}),
		"spec null":               nil,
		"no spec":                 "<none>",
	}
}

func driverObject(spec any) map[string]any {
	o := map[string]any{"apiVersion": "rebellions.ai/v1alpha1", "kind": "RBLNDriver", "metadata": map[string]any{"name": "rbln-driver-typed"}}
	if spec != "<none>" {
		o["spec"] = spec
	}
	return o
}

// TestReviewRefusesWhatTheAPIServerCannotDecode: each type error is refused by review (exit 1,
// 422 in the API server's words) and by post-render.
func TestReviewRefusesWhatTheAPIServerCannotDecode(t *testing.T) {
	for name, spec := range typeErrorSpecs() {
		t.Run(name, func(t *testing.T) {
			review := map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": map[string]any{
				"uid": "u", "kind": map[string]any{"group": "rebellions.ai", "version": "v1alpha1", "kind": "RBLNDriver"},
				"resource":  map[string]any{"group": "rebellions.ai", "version": "v1alpha1", "resource": "rblndrivers"},
				"operation": "CREATE", "name": "rbln-driver-typed", "object": driverObject(spec)}}
			data, err := json.Marshal(review)
			require.NoError(t, err)
			file := filepath.Join(t.TempDir(), "review.json")
			require.NoError(t, os.WriteFile(file, data, 0o600))
			r := run(t, "", "review", "-f", file)
			assert.Equal(t, ExitInvalid, r.code, r.stdout+r.stderr)
			assert.Contains(t, r.stdout, `"code": 422`)

			manifest, err := yaml.Marshal(driverObject(spec))
			require.NoError(t, err)
			pr := run(t, string(manifest), "post-render", "--live=false")
			assert.NotEqual(t, ExitOK, pr.code, pr.stderr)
		})
	}
}

// TestReviewAnswersAnObjectOfAnotherKind: an object the API server could not decode as the
// request's kind is answered 400 by the webhook's own decoding (exit 2), not an error without
// an answer.
func TestReviewAnswersAnObjectOfAnotherKind(t *testing.T) {
	review := map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": map[string]any{
		"uid": "u", "kind": map[string]any{"group": "rebellions.ai", "version": "v1alpha1", "kind": "RBLNDriver"},
		"resource":  map[string]any{"group": "rebellions.ai", "version": "v1alpha1", "resource": "rblndrivers"},
		"operation": "CREATE", "name": "x", "object": map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}}}
	data, err := json.Marshal(review)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "review.json")
	require.NoError(t, os.WriteFile(file, data, 0o600))
	r := run(t, "", "review", "-f", file)
	assert.Equal(t, ExitUsage, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, `"code": 400`)
	assert.Contains(t, r.stdout, "request.object is a v1 ConfigMap, expected a rebellions.ai/v1alpha1 RBLNDriver")
}
