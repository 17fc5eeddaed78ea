package render

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/driverguard/driverguard/charts"
)

// withEnumValue returns the schema with value added to the enum of every property named prop
// (the enum of the property, or of one of its anyOf alternatives).
func withEnumValue(t *testing.T, schema []byte, prop, value string) []byte {
	t.Helper()
	var doc any
	require.NoError(t, json.Unmarshal(schema, &doc))
	added := 0
	var walk func(v any)
	walk = func(v any) {
		switch n := v.(type) {
		case map[string]any:
			if props, ok := n["properties"].(map[string]any); ok {
				if p, ok := props[prop].(map[string]any); ok {
					for _, s := range append([]any{p}, anySlice(p["anyOf"])...) {
						if s, ok := s.(map[string]any); ok && s["enum"] != nil {
							s["enum"] = append(s["enum"].([]any), value)
							added++
						}
					}
				}
			}
			for _, c := range n {
				walk(c)
			}
		case []any:
			for _, c := range n {
				walk(c)
			}
		}
	}
	walk(doc)
	require.NotZero(t, added, "no enum of %s in the schema", prop)
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	return out
}

func anySlice(v any) []any { s, _ := v.([]any); return s }

// TestEnumValueIsSchemaOnly: adding a value to an enum of values.schema.json is all it takes
// for render to accept it — no Go change. The embedded schema rejects "Sometimes" (a pull
// policy) and "NoRun" (a taint effect); the same schema with both added to its enums accepts
// them and renders them.
func TestEnumValueIsSchemaOnly(t *testing.T) {
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	var user map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(`driver:
  image: {pullPolicy: Sometimes}
  manager: {image: {pullPolicy: Sometimes}}
  tolerations: [{key: npu, operator: Exists, effect: NoRun}]
  instances:
    canary:
      image: {pullPolicy: Sometimes}
      nodeSelector: {rebellions.ai/npu.family: atom}
`), &user))

	embedded, err := schemaFor(ch)
	require.NoError(t, err)
	_, err = render(context.Background(), embedded, ch, user, Options{})
	var invalid *InvalidValuesError
	require.ErrorAs(t, err, &invalid)
	for _, want := range []string{
		`driver.image.pullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`,
		`driver.manager.image.pullPolicy: Unsupported value: "Sometimes"`,
		`driver.instances.canary.image.pullPolicy: Unsupported value: "Sometimes"`,
		`driver.tolerations[0].effect: Unsupported value: "NoRun": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Len(t, invalid.Errs, 4, "%v", err)

	schema := withEnumValue(t, withEnumValue(t, ch.Schema, "pullPolicy", "Sometimes"), "effect", "NoRun")
	modified, err := newValuesSchema(schema)
	require.NoError(t, err)
	r, err := render(context.Background(), modified, ch, user, Options{})
	require.NoError(t, err)
	require.Len(t, r.Drivers, 2)
	for _, d := range r.Drivers {
		assert.Equal(t, corev1.PullPolicy("Sometimes"), d.Spec.ImagePullPolicy, d.Name)
	}
	assert.Equal(t, corev1.PullPolicy("Sometimes"), r.Drivers[0].Spec.Manager.ImagePullPolicy)
	assert.Equal(t, corev1.TaintEffect("NoRun"), r.Drivers[0].Spec.Tolerations[0].Effect)

	// A chart that carries the modified file renders with it (Render compiles it once).
	other := *ch
	other.Schema = schema
	_, err = Render(&other, user, Options{})
	require.NoError(t, err)
	_, err = Render(ch, user, Options{})
	require.ErrorAs(t, err, &invalid, "the embedded chart keeps its own schema")
}

// TestExplanationsMatchTheSchema keeps every explanation and phraser reachable: each names a
// keyword the schema has, each phraser's pattern is one the schema uses.
func TestExplanationsMatchTheSchema(t *testing.T) {
	vs, err := embedded()
	require.NoError(t, err)
	for kw := range explanations {
		i := strings.LastIndex(kw, "/")
		loc, name := kw[:i], kw[i+1:]
		s := vs.at[schemaURL+"#"+loc]
		var ok bool
		switch {
		case s != nil && name == "type":
			ok = s.Types != nil
		case s != nil && name == "anyOf":
			ok = len(s.AnyOf) > 0
		case s != nil && name == "minProperties":
			ok = s.MinProperties != nil
		case s != nil && name == "maxProperties":
			ok = s.MaxProperties != nil
		default: // required/<property>, additionalProperties/<property>
			j := strings.LastIndex(loc, "/")
			s = vs.at[schemaURL+"#"+loc[:j]]
			switch keyword := loc[j+1:]; {
			case s == nil:
			case keyword == "required":
				ok = slices.Contains(s.Required, name)
			case keyword == "additionalProperties":
				ok = s.AdditionalProperties == false && s.Properties[name] == nil
			}
		}
		assert.True(t, ok, "explanation %s: the schema has no such keyword", kw)
	}
	used := map[string]bool{}
	for _, s := range vs.at {
		if s.Pattern != nil {
			used[basePattern(s.Pattern.String())] = true
		}
	}
	for p := range phrasers {
		assert.True(t, used[p], "phraser for %s: no such pattern in the schema", p)
	}
}
