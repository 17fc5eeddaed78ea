package output

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestMarshalYAMLIsSigsYAML: on what sigs.k8s.io/yaml writes, the same bytes; where it fails (a
// control character JSON leaves raw), a YAML document that reads back as the value.
func TestMarshalYAMLIsSigsYAML(t *testing.T) {
	type doc struct {
		Name   string            `json:"name"`
		Count  int               `json:"count"`
		Ratio  float64           `json:"ratio"`
		Big    int64             `json:"big"`
		Labels map[string]string `json:"labels,omitempty"`
		List   []any             `json:"list"`
		Nil    *string           `json:"nil"`
	}
	plain := doc{Name: "rbln-driver", Count: 3, Ratio: 0.5, Big: 1 << 53, Labels: map[string]string{"b": "true", "a": "1.0", "c": "yes"},
		List: []any{"x", 1, 2.5, true, nil, map[string]any{"k": "v"}}}
	want, err := yaml.Marshal(plain)
	require.NoError(t, err)
	got, err := MarshalYAML(plain)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	for _, s := range []string{"del\x7f", "nel\u0085", "esc\x1b[31m", "bidi\u202e", "tab\tnewline\n"} {
		hostile := doc{Name: s, Labels: map[string]string{s: s}}
		got, err := MarshalYAML(hostile)
		require.NoError(t, err, "%q", s)
		var back doc
		require.NoError(t, yaml.Unmarshal(got, &back), "%s", got)
		assert.Equal(t, s, back.Name)
		assert.Equal(t, s, back.Labels[s])
		assert.NotContains(t, string(got), "\x1b")
		assert.NotContains(t, string(got), "\x7f")
	}
}
