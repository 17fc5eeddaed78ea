package suite

import (
	"bytes"
	"os"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const schemaFile = "../docs/dgtest.schema.json"

func suiteSchema(t *testing.T) (*jsonschema.Schema, map[string]any) {
	t.Helper()
	data, err := os.ReadFile(schemaFile)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(schemaFile, doc))
	s, err := c.Compile(schemaFile)
	require.NoError(t, err)
	return s, doc.(map[string]any)
}

// TestShippedSuitesMatchTheSchema: every suite of the repository is valid under the schema
// and loads.
func TestShippedSuitesMatchTheSchema(t *testing.T) {
	s, _ := suiteSchema(t)
	files, err := Find([]string{"../docs/examples", "../policy/library/suites"})
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		js, err := yaml.YAMLToJSON(data)
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
		require.NoError(t, err)
		assert.NoError(t, s.Validate(doc), f)
		_, err = Load(f)
		assert.NoError(t, err, f)
	}
}

// TestSchemaKeysAreTheLoadersKeys: the schema lists exactly the keys Load takes, place by
// place, so neither can grow a field the other refuses.
func TestSchemaKeysAreTheLoadersKeys(t *testing.T) {
	_, doc := suiteSchema(t)
	defs := doc["$defs"].(map[string]any)
	keys := func(node map[string]any) []string {
		var out []string
		for k := range node["properties"].(map[string]any) {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	expect := defs["expect"].(map[string]any)
	for typ, node := range map[string]map[string]any{
		"Suite": doc, "Inventory": defs["inventory"].(map[string]any), "Case": defs["case"].(map[string]any),
		"Expect": expect, "ResultExpect": defs["result"].(map[string]any),
		"PlanExpect": expect["properties"].(map[string]any)["plan"].(map[string]any),
	} {
		want := fieldsOf(typ)
		slices.Sort(want)
		assert.Equal(t, want, keys(node), typ)
	}
}

// TestSchemaRejectsWhatLoadRejects: a few suites Load refuses, refused by the schema too.
func TestSchemaRejectsWhatLoadRejects(t *testing.T) {
	s, _ := suiteSchema(t)
	for name, content := range map[string]string{
		"unknown key":            header + "tests:\n  - name: a\n    valuse: [v.yaml]\n    expect: {verdict: allowed}\n",
		"two inputs":             header + "tests:\n  - name: a\n    values: [v.yaml]\n    review: r.json\n    expect: {verdict: allowed}\n",
		"bad result":             header + "tests:\n  - name: a\n    values: [v.yaml]\n    expect:\n      results: [{object: A/b, rule: X, result: warning}]\n",
		"bad plan":               header + "tests:\n  - name: a\n    values: [v.yaml]\n    expect: {plan: {nodes: {n1: upgraded}}}\n",
		"coverageOf not strings": header + "coverageOf: [{a: b}]\ntests:\n  - name: a\n    values: [v.yaml]\n    expect: {verdict: allowed}\n",
		"object no kind":         header + "tests:\n  - name: a\n    values: [v.yaml]\n    expect:\n      results: [{object: rbln-driver, rule: X, result: fail}]\n",
	} {
		t.Run(name, func(t *testing.T) {
			js, err := yaml.YAMLToJSON([]byte(content))
			require.NoError(t, err)
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
			require.NoError(t, err)
			assert.Error(t, s.Validate(doc))
			_, err = Load(writeSuiteFile(t, content))
			assert.Error(t, err)
		})
	}
}
