package render

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// TestUnmarshalValuesMatchesSigsYAML: unmarshalValues gives what Helm's reader of a values
// file (sigs.k8s.io/yaml.Unmarshal into a map) gives, or fails where it fails.
func TestUnmarshalValuesMatchesSigsYAML(t *testing.T) {
	docs := map[string]string{
		"empty":                   "",
		"comments only":           "# nothing\n",
		"null document":           "null\n",
		"a list document":         "- a\n- b\n",
		"a scalar document":       "3\n",
		"a string document":       "x\n",
		"numbers":                 "a: 1\nb: -7\nc: 3.10\nd: 1e3\ne: 0x1F\nf: 0o17\ng: 017\nh: 1_000\ni: .5\nj: -0.0\nk: 12345678901234567890\nl: 9223372036854775807\nm: -9223372036854775808\nn: 123456789012345678\n",
		"booleans and nulls":      "a: y\nb: n\nc: yes\nd: Off\ne: ~\nf: null\ng: TRUE\nh: ''\n",
		"timestamps stay strings": "a: 2001-12-14t21:59:43.10-05:00\nb: 2002-12-14\n",
		"infinity":                "a: .inf\n",
		"not a number":            "a: .nan\n",
		"binary":                  "a: !!binary gIGC\nb: !!binary aGVsbG8=\n",
		"invalid UTF-8 escapes":   "a: \"\\xff\\xfeok\"\n",
		"key types":               "1: a\n2.5: b\ntrue: c\ny: d\n~: e\n",
		"a float key":             "1.0: a\n0.1: b\n",
		"a list key":              "? [a, b]\n: x\n",
		"a map key":               "? {a: b}\n: x\n",
		"nested":                  "driver:\n  tolerations:\n  - {key: a, value: 1}\n  - [1, 2, {x: [y]}]\n  annotations: {\"a\": \"<&>\", b: \"\\u2028\"}\n",
		"anchors and merges":      "base: &b {x: 1, y: [1, 2]}\nother:\n  <<: *b\n  y: 3\nlist: [*b, *b]\n",
		"tags":                    "a: !!str 3.10\nb: !!int \"7\"\nc: !!float 1\n",
		"multi-document":          "a: 1\n---\nb: 2\n",
		"duplicate keys":          "a: 1\na: 2\n",
		"bad YAML":                "a: [unclosed\n",
		"tabs":                    "a:\n\t- b\n",
		"long string":             "a: \"" + strings.Repeat("é", 10000) + "\"\n",
	}
	files, err := filepath.Glob("../test/testdata/values/*.yaml")
	require.NoError(t, err)
	examples, err := filepath.Glob("../examples/*.yaml")
	require.NoError(t, err)
	for _, f := range append(files, examples...) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		docs[f] = string(data)
	}
	require.Greater(t, len(docs), 40)
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			want := map[string]any{}
			wantErr := yaml.Unmarshal([]byte(doc), &want)
			got, err := unmarshalValues(strings.NewReader(doc))
			if wantErr != nil {
				require.Error(t, err, "sigs.k8s.io/yaml: %v", wantErr)
				return
			}
			if documents(t, doc) > 1 {
				require.Error(t, err, "a second document would be dropped by Helm")
				assert.Contains(t, err.Error(), "more than one YAML document")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

// documents counts the documents of a YAML stream that are not empty (apimachinery's reader).
func documents(t *testing.T, stream string) int {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	n := 0
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return n
		}
		require.NoError(t, err)
		var v any
		if yaml.Unmarshal(doc, &v) != nil || v != nil {
			n++
		}
	}
}
