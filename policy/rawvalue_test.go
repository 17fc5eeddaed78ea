package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawValueCases are JSON texts around what the one pass handles and what it hands to OPA's
// path: escapes, surrogates, invalid UTF-8, duplicate names, numbers in every form, deep
// nesting, trailing data and malformed text.
func rawValueCases() []string {
	deep := strings.Repeat("[", maxRawDepth+5) + strings.Repeat("]", maxRawDepth+5)
	ok := strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)
	return []string{
		`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1e3`, `1E+3`, `-1.5e-7`, `12345678901234567890123`, `0.1`,
		`""`, `"a"`, `"\u00e9\n\t\"\\\/"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`, "\"\xff\"", "\"\xc3\"", `"ü"`,
		`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":null}]},"d":[]}`, `{"":""}`, `[1,"2",[3],{"4":5},true,null]`,
		`{"apiVersion":"rebellions.ai/v1alpha1","kind":"RBLNDriver","metadata":{"name":"x","generation":1},"spec":{"nodeSelector":{"k":"v"}}}`,
		deep, ok, ` {"a" : [ 1 , 2 ] } `, "{\"a\":1}\n",
		`1e40000`, `-1e-40000`, `1e30104`, `[1E+99999]`, `{"a":1e100001}`, `1E+99999999999999999999`, `{"x":1e99999999}`,
		"1" + strings.Repeat("0", 30200) + "e0", "1" + strings.Repeat("0", 400), `1e300`, `-1.5E-300`,
		`{"a":1} x`, `{"a":1}{}`, `{`, `[1,]`, `{"a"}`, `{"a":}`, `01`, `1.`, `.5`, `+1`, `NaN`, `nul`, ``, ` `, `"`, `{"a":1,}`, `[` + "\x00" + `]`,
	}
}

// TestRawValueIsOPAsConversion compares rawValue with OPA's own conversion on every case and
// on the AdmissionReviews of test/testdata/review: equal values, or both an error.
func TestRawValueIsOPAsConversion(t *testing.T) {
	cases := rawValueCases()
	files, err := filepath.Glob("../test/testdata/review/requests/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		assertSameValue(t, []byte(c))
	}
}

func assertSameValue(t *testing.T, raw []byte) {
	t.Helper()
	want, wantErr := opaValue(raw)
	got, err := rawValue(raw)
	if wantErr != nil {
		assert.Error(t, err, "%q", raw)
		return
	}
	require.NoError(t, err, "%q", raw)
	assert.Equal(t, 0, ast.Compare(want, got), "%q:\n want %v\n  got %v", raw, want, got)
	assert.Equal(t, want.String(), got.String(), "%q", raw)
}

// FuzzRawValue: on any text, rawValue is OPA's conversion.
func FuzzRawValue(f *testing.F) {
	for _, c := range rawValueCases() {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		assertSameValue(t, raw)
	})
}

// TestObjectValueOfTypedObjects: a Go value goes through its JSON text.
func TestObjectValueOfTypedObjects(t *testing.T) {
	v, err := objectValue(map[string]any{"kind": "RBLNDriver", "n": json.Number("1.50")}, readAll)
	require.NoError(t, err)
	assert.Equal(t, `{"kind": "RBLNDriver", "n": 1.50}`, v.String())
}

// BenchmarkObjectValue converts an admission request's RBLNDriver: the one pass against OPA's
// path, in one run, and the one pass keeping only what the three checks of the side-by-side
// harness read (rawPart).
func BenchmarkObjectValue(b *testing.B) {
	raw := []byte(`{"apiVersion":"rebellions.ai/v1alpha1","kind":"RBLNDriver","metadata":{"name":"rbln-driver-perf","uid":"d-rbln-driver-rebel","generation":1,"creationTimestamp":"2026-11-29T10:00:00Z","labels":{"app.kubernetes.io/managed-by":"Helm"}},` +
		`"spec":{"registry":"registry.example","image":"rebellions/rbln-driver","version":"3.2.2","imagePullPolicy":"IfNotPresent","smd":{"registry":"registry.example","image":"rebellions/rbln-smd"},` +
		`"nodeSelector":{"rebellions.ai/npu.family":"rebel","rack":"r7"},"manager":{"registry":"registry.example","image":"rebellions/rbln-k8s-driver-manager","version":"v0.2.2"},"tolerations":[{"key":"npu","operator":"Exists"}]}}`)
	three := tree("kind", "spec.version", "spec.registry", "spec.nodeSelector")
	for _, c := range []struct {
		name string
		fn   func([]byte) (ast.Value, error)
	}{{"one-pass", rawValue}, {"opa", opaValue}, {"one-pass-three-paths", func(raw []byte) (ast.Value, error) {
		return rawPart(raw, three)
	}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.fn(raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEvaluateRefusesHugeNumbers: an object holding a number OPA refuses (its exponent would
// make comparisons and arithmetic cost without bound) fails the evaluation, as with OPA's
// own conversion, rather than reaching the policies.
func TestEvaluateRefusesHugeNumbers(t *testing.T) {
	e, err := New(t.Context(), Options{Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	for _, n := range []string{"1e40000", "1e99999999", "-1e-40000"} {
		_, err := e.Evaluate(t.Context(), &Input{Object: json.RawMessage(`{"kind":"RBLNDriver","metadata":{"name":"rbln-driver-x"},"x":` + n + `}`), Operation: OperationCreate})
		require.Error(t, err, n)
		assert.Contains(t, err.Error(), "number too big", n)
	}
}
