package policy

import (
	"bytes"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reference is what parseJSONValue must equal: OPA's own two-pass conversion.
func reference(data []byte) (ast.Value, error) {
	var doc any
	if err := util.UnmarshalJSON(data, &doc); err != nil {
		return nil, err
	}
	return ast.InterfaceToValue(doc)
}

var jsonCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `-12.25E+10`, `123456789012345678901234567890`, `true`, `false`, `null`,
	`{"a": 1, "b": [true, false, null, "x"], "c": {"d": {}}}`,
	` { "k" : "v" , "n" : [ 1 , 2 ] } `,
	`{"a": 1, "a": 2}`,
	`"esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00"`,
	`"naïve 日本"`,
	"\"bad \xff utf-8\"",
	`{"apiVersion":"rebellions.ai/v1alpha1","kind":"RBLNDriver","metadata":{"name":"x","labels":{"a.b/c":"d"}},"spec":{"nodeSelector":{}}}`,
}

func TestParseJSONValueMatchesOPA(t *testing.T) {
	for _, c := range jsonCases {
		want, err := reference([]byte(c))
		require.NoError(t, err, c)
		got, err := parseJSONValue([]byte(c))
		require.NoError(t, err, c)
		assert.Equal(t, 0, want.Compare(got), "%s\nwant %s\ngot  %s", c, want, got)
	}
}

func TestParseJSONValueRejectsInvalidJSON(t *testing.T) {
	for _, c := range []string{``, `{`, `[1,]`, `{"a"}`, `{"a":}`, `{a:1}`, `01`, `1.`, `.5`, `1e`, `-`, `tru`, `nul`, `"abc`, "\"ctl \x01\"", `"\x"`, `[1] 2`, `{"a":1,}`, `+1`} {
		_, err := parseJSONValue([]byte(c))
		assert.Error(t, err, "%q", c)
	}
	deep := bytes.Repeat([]byte("["), maxJSONDepth+2)
	_, err := parseJSONValue(deep)
	assert.Error(t, err)
}

// FuzzParseJSONValue: on any input the parser agrees with OPA's conversion, and never panics.
func FuzzParseJSONValue(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseJSONValue(data)
		want, refErr := reference(data)
		if refErr != nil {
			if err == nil {
				// OPA's decoder rejects it (e.g. trailing data after a valid value is fine for a
				// json.Decoder but not for us); both must reject invalid JSON.
				t.Fatalf("accepted what OPA rejects: %q (%v)", data, refErr)
			}
			return
		}
		if err != nil {
			// The reference decoder stops after the first value; trailing data is ours to refuse.
			return
		}
		if want.Compare(got) != 0 {
			t.Fatalf("%q: want %s, got %s", data, want, got)
		}
	})
}
