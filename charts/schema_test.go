package charts_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/api/validation"
	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/operator"
)

// TestSchemaUsesTheSharedPatterns keeps the regular expressions that values.schema.json
// restates equal to the ones the Go code uses (api/validation), so `helm install` and
// `driverguard render` cannot drift apart on them.
func TestSchemaUsesTheSharedPatterns(t *testing.T) {
	data, err := charts.FS.ReadFile(charts.ChartDir + "/values.schema.json")
	require.NoError(t, err)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(data, &schema))

	get := func(path ...string) any {
		var v any = schema
		for _, k := range path {
			m, ok := v.(map[string]any)
			require.True(t, ok, "schema path %v", path)
			v = m[k]
		}
		return v
	}
	driver := []string{"properties", "driver", "properties"}
	image := append(append([]string{}, driver...), "image", "properties")
	tests := map[string]struct {
		path []string
		want string
	}{
		"instance keys":     {append(append([]string{}, driver...), "instances", "propertyNames", "pattern"), validation.InstanceKeyPattern},
		"selector keys":     {[]string{"$defs", "labelSelector", "propertyNames", "pattern"}, validation.LabelKeyPattern},
		"selector values":   {[]string{"$defs", "labelSelector", "additionalProperties", "pattern"}, validation.LabelValuePattern},
		"driver tag":        {append(append([]string{}, image...), "tag", "pattern"), validation.TagPattern},
		"driver repository": {append(append([]string{}, image...), "repository", "pattern"), validation.RepositoryPattern},
		"driver registry":   {append(append([]string{}, image...), "registry", "pattern"), validation.RegistryPattern},
		"annotation keys":   {[]string{"$defs", "annotations", "propertyNames", "pattern"}, validation.LabelKeyPattern},
	}
	for name, tt := range tests {
		assert.Equal(t, tt.want, get(tt.path...), name)
	}
	reserved, ok := get("$defs", "labelSelector", "propertyNames", "not", "enum").([]any)
	require.True(t, ok)
	var keys []string
	for _, k := range reserved {
		keys = append(keys, k.(string))
	}
	assert.ElementsMatch(t, operator.ReservedSelectorKeys, keys)
}

// TestEmbeddedChartLoads: the binary always renders the chart it ships with.
func TestEmbeddedChartLoads(t *testing.T) {
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	assert.Equal(t, "driverguard", ch.Name())
	assert.NotEmpty(t, ch.Schema)
	assert.NotEmpty(t, ch.Templates)
	names := map[string]bool{}
	for _, f := range ch.Templates {
		names[f.Name] = true
	}
	assert.True(t, names["templates/rblndrivers.yaml"])
	assert.True(t, names["templates/_helpers.tpl"])
}

// TestSchemaUsesTheSharedLimits keeps the size limits of values.schema.json equal to those of
// an RBLNDriver spec (api/validation), so `helm install` refuses what the webhook would deny.
func TestSchemaUsesTheSharedLimits(t *testing.T) {
	data, err := charts.FS.ReadFile(charts.ChartDir + "/values.schema.json")
	require.NoError(t, err)
	var schema struct {
		Defs map[string]map[string]any `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(data, &schema))
	assert.EqualValues(t, validation.MaxSelectorKeys, schema.Defs["labelSelector"]["maxProperties"], "selector keys")
	assert.EqualValues(t, validation.MaxAnnotations, schema.Defs["annotations"]["maxProperties"], "annotations")
	assert.EqualValues(t, validation.MaxResourceNames, schema.Defs["resourceList"]["maxProperties"], "resources")
	assert.EqualValues(t, validation.MaxPullSecrets, schema.Defs["pullSecrets"]["maxItems"], "pull secrets")
	// Every list of tolerations or environment variables, top level and instance.
	var walk func(any) int
	walk = func(v any) int {
		n := 0
		switch o := v.(type) {
		case map[string]any:
			if items, ok := o["items"].(map[string]any); ok {
				switch items["$ref"] {
				case "#/$defs/toleration":
					assert.EqualValues(t, validation.MaxTolerations, o["maxItems"], "tolerations")
					n++
				case "#/$defs/envVar":
					assert.EqualValues(t, validation.MaxEnv, o["maxItems"], "env")
					n++
				}
			}
			for _, c := range o {
				n += walk(c)
			}
		case []any:
			for _, c := range o {
				n += walk(c)
			}
		}
		return n
	}
	var whole any
	require.NoError(t, json.Unmarshal(data, &whole))
	assert.GreaterOrEqual(t, walk(whole), 4, "the lists of tolerations and env of the driver block and of an instance")
}
