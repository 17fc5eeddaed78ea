package webhook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/driverguard/driverguard/api/v1alpha1"
)

// decodeCases are AdmissionReviews (test/testdata/review's, every object of theirs alone) and
// texts around where the two decoders differ: duplicate names, invalid UTF-8, case, nulls,
// numbers, empty and nested values.
func decodeCases(t testing.TB) []string {
	files, err := filepath.Glob("../test/testdata/review/requests/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var cases []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		cases = append(cases, string(b))
		var r review
		require.NoError(t, sigsjson.UnmarshalCaseSensitivePreserveInts(b, &r), f)
		if r.Request != nil {
			cases = append(cases, string(r.Request.Object.Raw), string(r.Request.OldObject.Raw))
		}
	}
	return append(cases,
		`{}`, `null`, `[]`, `1`, `""`,
		`{"kind":"AdmissionReview","kind":"X"}`, `{"Kind":"AdmissionReview"}`, "{\"kind\":\"\xff\"}",
		`{"request":null}`, `{"request":{"uid":null,"userInfo":null,"dryRun":null,"object":null}}`,
		`{"request":{"uid":"u","object":{"a":1},"oldObject":[1,2],"options":"x","dryRun":true}}`,
		`{"request":{"userInfo":{"extra":{"k":["a","b"],"e":[]},"groups":[]}}}`,
		`{"metadata":{"name":"x","labels":{}, "creationTimestamp":"2026-11-29T10:00:00Z","generation":1}}`,
		`{"metadata":{"generation":1.5}}`, `{"metadata":{"generation":"1"}}`, `{"metadata":{"generation":1e2}}`,
		`{"spec":{"nodeSelector":{"a":"b","a":"c"},"tolerations":[{"key":"k","tolerationSeconds":30}]}}`,
		`{"spec":{"nodeSelector":null,"tolerations":null,"resources":{"limits":{"cpu":"500m","memory":"1Gi"}}}}`,
		`{"spec":{"resources":{"limits":{"cpu":1}}}}`, `{"spec":{"resources":{"limits":{"cpu":"bad"}}}}`,
		`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"i","ports":[{"containerPort":80}]}]}},"updateStrategy":{"rollingUpdate":{"maxUnavailable":"10%"}}}}`,
		`{"spec":{"updateStrategy":{"rollingUpdate":{"maxUnavailable":1}}}}`,
		`{"spec":{"driver":{"upgradePolicy":{"maxParallelUpgrades":-1,"drain":{"timeoutSeconds":300}}}}}`,
		`{"a":`+strings.Repeat("[", 2000)+strings.Repeat("]", 2000)+`}`,
		`{"spec":{"version":"\u00e9\ud800"}}`, `{"spec":{"version":"ok"}} trailing`,
	)
}

// sameAsSigsJSON: when encoding/json/v2 accepts data into a T, sigs.k8s.io/json accepts it
// too and decodes the same value.
func sameAsSigsJSON[T any](t *testing.T, data []byte) {
	t.Helper()
	var fast T
	if jsonv2.Unmarshal(data, &fast) != nil {
		return // refused: decodeJSON decodes with sigs.k8s.io/json alone
	}
	var want T
	require.NoError(t, sigsjson.UnmarshalCaseSensitivePreserveInts(data, &want), "v2 accepts what sigs.k8s.io/json refuses: %q", data)
	assert.Equal(t, want, fast, "%q", data)
}

func checkDecodeJSON(t *testing.T, data []byte) {
	sameAsSigsJSON[review](t, data)
	sameAsSigsJSON[v1alpha1.RBLNDriver](t, data)
	sameAsSigsJSON[v1alpha1.RBLNClusterPolicy](t, data)
	sameAsSigsJSON[appsv1.DaemonSet](t, data)
	// decodeJSON's result and error are sigs.k8s.io/json's.
	var got, want v1alpha1.RBLNDriver
	err := decodeJSON(data, &got)
	wantErr := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &want)
	if wantErr != nil {
		assert.EqualError(t, err, wantErr.Error(), "%q", data)
		return
	}
	require.NoError(t, err, "%q", data)
	assert.Equal(t, want, got, "%q", data)
}

// TestDecodeJSONIsSigsJSON checks decodeJSON against sigs.k8s.io/json on every case.
func TestDecodeJSONIsSigsJSON(t *testing.T) {
	accepted := 0
	for _, c := range decodeCases(t) {
		checkDecodeJSON(t, []byte(c))
		var r review
		if jsonv2.Unmarshal([]byte(c), &r) == nil {
			accepted++
		}
	}
	assert.Greater(t, accepted, 20, "the fast path takes most real requests")
}

// FuzzDecodeJSON: on any text, decodeJSON is sigs.k8s.io/json.
func FuzzDecodeJSON(f *testing.F) {
	for _, c := range decodeCases(f) {
		f.Add([]byte(c))
	}
	f.Fuzz(checkDecodeJSON)
}

// BenchmarkDecodeJSON decodes an AdmissionReview and its RBLNDriver with decodeJSON and with
// sigs.k8s.io/json alone, in one run.
func BenchmarkDecodeJSON(b *testing.B) {
	body, err := os.ReadFile("../test/testdata/review/requests/driver-create-allowed.json")
	require.NoError(b, err)
	var r review
	require.NoError(b, sigsjson.UnmarshalCaseSensitivePreserveInts(body, &r))
	object := r.Request.Object.Raw
	for _, c := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"decodeJSON", decodeJSON}, {"sigs.k8s.io-json", sigsjson.UnmarshalCaseSensitivePreserveInts}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var r review
				var d v1alpha1.RBLNDriver
				if err := c.decode(body, &r); err != nil {
					b.Fatal(err)
				}
				if err := c.decode(object, &d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
