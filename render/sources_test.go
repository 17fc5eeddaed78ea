package render_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/driverguard/driverguard/charts"
	"github.com/driverguard/driverguard/render"
)

// TestSourcesLocate: values path → the source that set it last, its line and column and the
// text as written, following Helm's merge.
func TestSourcesLocate(t *testing.T) {
	f := writeFiles(t, map[string]string{
		"a.yaml": `driver:
  image:
    tag: 3.10
    registry: "r.example"
  annotations: {team: a, on: y}
  tolerations:
    - key: a
      operator: Exists
  base: &base {pullPolicy: Never}
  manager:
    <<: *base
    image: {tag: v1}
`,
		"b.yaml": `driver:
  annotations: {team: b}
  tolerations: [{key: z}]
  smd: scalar
`,
	})
	opts := render.ValuesOptions{
		ValueFiles:   []string{f["a.yaml"], f["b.yaml"]},
		JSONValues:   []string{`driver.env=[{"name":"X","value":3.10}]`},
		Values:       []string{"driver.priorityClassName=True,driver.tolerations[0].value=7"},
		StringValues: []string{"driver.nodeSelector.zone=1"},
		FileValues:   []string{"driver.image.repository=" + f["b.yaml"]},
	}
	_, src, err := render.Load(context.Background(), opts)
	require.NoError(t, err)
	tests := []struct {
		name string
		path string
		want render.Location
		none bool
	}{
		{name: "a plain scalar: its text, not YAML's 3.1", path: "driver.image.tag",
			want: render.Location{Kind: render.FromFile, Source: f["a.yaml"], Line: 3, Column: 10, KeyLine: 3, KeyColumn: 5, Text: "3.10", Plain: true}},
		{name: "a quoted scalar", path: "driver.image.registry",
			want: render.Location{Kind: render.FromFile, Source: f["a.yaml"], Line: 4, Column: 15, KeyLine: 4, KeyColumn: 5, Text: "r.example"}},
		{name: "a later file's key wins", path: "driver.annotations.team",
			want: render.Location{Kind: render.FromFile, Source: f["b.yaml"], Line: 2, Column: 23, KeyLine: 2, KeyColumn: 17, Text: "b", Plain: true}},
		{name: "a key the later file does not set", path: "driver.annotations.true",
			want: render.Location{Kind: render.FromFile, Source: f["a.yaml"], Line: 5, Column: 30, KeyLine: 5, KeyColumn: 26, Text: "y", Plain: true}},
		{name: "a map", path: "driver.image",
			want: render.Location{Kind: render.FromFile, Source: f["a.yaml"], Line: 3, Column: 5, KeyLine: 2, KeyColumn: 3}},
		{name: "a merged key (<<)", path: "driver.manager.pullPolicy",
			want: render.Location{Kind: render.FromFile, Source: f["a.yaml"], Line: 9, Column: 28, KeyLine: 9, KeyColumn: 16, Text: "Never", Plain: true}},
		{name: "a list item --set changed", path: "driver.tolerations.0.value",
			want: render.Location{Kind: render.FromSet, Source: "driver.priorityClassName=True,driver.tolerations[0].value=7", Text: "7"}},
		{name: "a list item key the later file replaced the list with", path: "driver.tolerations.0.key",
			want: render.Location{Kind: render.FromFile, Source: f["b.yaml"], Line: 3, Column: 23, KeyLine: 3, KeyColumn: 18, Text: "z", Plain: true}},
		{name: "an item of a list the later file replaced", path: "driver.tolerations.1", none: true},
		{name: "below a scalar that replaced a map", path: "driver.smd.image", none: true},
		{name: "--set: the text given", path: "driver.priorityClassName",
			want: render.Location{Kind: render.FromSet, Source: "driver.priorityClassName=True,driver.tolerations[0].value=7", Text: "True"}},
		{name: "--set-string", path: "driver.nodeSelector.zone",
			want: render.Location{Kind: render.FromSetString, Source: "driver.nodeSelector.zone=1", Text: "1"}},
		{name: "--set-json", path: "driver.env.0.value",
			want: render.Location{Kind: render.FromSetJSON, Source: `driver.env=[{"name":"X","value":3.10}]`, Text: "3.1"}},
		{name: "--set-file: no text", path: "driver.image.repository",
			want: render.Location{Kind: render.FromSetFile, Source: "driver.image.repository=" + f["b.yaml"]}},
		{name: "a map only the command line wrote", path: "driver.nodeSelector",
			want: render.Location{Kind: render.FromSetString, Source: "driver.nodeSelector.zone=1"}},
		{name: "a chart default", path: "driver.image.pullPolicy", none: true},
		{name: "a path that does not exist", path: "driver.nope.x", none: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			loc, ok := src.Locate(strings.Split(tt.path, ".")...)
			if tt.none {
				assert.False(t, ok, "%+v", loc)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tt.want, loc)
		})
	}
	assert.Equal(t, f["a.yaml"]+":3:10", mustLocate(t, src, "driver", "image", "tag").String())
	assert.Equal(t, "--set-string driver.nodeSelector.zone=1", mustLocate(t, src, "driver", "nodeSelector", "zone").String())

	var none *render.Sources
	_, ok := none.Locate("driver")
	assert.False(t, ok, "no sources, no location")
}

func mustLocate(t *testing.T, src *render.Sources, path ...string) render.Location {
	t.Helper()
	loc, ok := src.Locate(path...)
	require.True(t, ok, path)
	return loc
}

// renderWithSources loads the options as the CLI does and renders them.
func renderWithSources(t *testing.T, opts render.ValuesOptions) error {
	t.Helper()
	vals, src, err := render.Load(context.Background(), opts)
	require.NoError(t, err)
	ch, err := charts.Driverguard()
	require.NoError(t, err)
	r, err := render.Render(ch, vals, render.Options{Sources: src})
	if err == nil {
		require.NotNil(t, r)
	}
	return err
}

// TestHintsQuoteWhatTheUserWrote: the fix for a number or boolean where a string belongs
// quotes the values file's text (3.10, y) or the --set text, never what YAML made of it.
func TestHintsQuoteWhatTheUserWrote(t *testing.T) {
	long := strings.Repeat("1", 300)
	f := writeFiles(t, map[string]string{
		"tag.yaml":  "driver:\n  image:\n    tag: 3.10\n",
		"sel.yaml":  "driver:\n  instances:\n    a:\n      nodeSelector: {x: y}\n",
		"ann.yaml":  "driver:\n  annotations:\n    team: 0x1F\n",
		"long.yaml": "driver:\n  image:\n    tag: " + long + "\n",
		"list.yaml": "driver:\n  image:\n    tag: [a, b]\n",
	})
	tests := []struct {
		name    string
		opts    render.ValuesOptions
		want    []string
		notWant []string
	}{
		{"an unquoted 3.10", render.ValuesOptions{ValueFiles: []string{f["tag.yaml"]}},
			[]string{`driver.image.tag: Invalid value: 3.1: must be a string; YAML reads the unquoted 3.10 at ` + f["tag.yaml"] + `:3:10 as the number 3.1: quote it: "3.10"`}, []string{`"3.1"`}},
		{"an unquoted y", render.ValuesOptions{ValueFiles: []string{f["sel.yaml"]}},
			[]string{`driver.instances.a.nodeSelector[x]: Invalid value: true: label values are strings: YAML reads the unquoted y at ` + f["sel.yaml"] + `:4:25 as the boolean true: quote it: "y"`}, []string{`"true"`}},
		{"a hexadecimal annotation", render.ValuesOptions{ValueFiles: []string{f["ann.yaml"]}},
			[]string{`YAML reads the unquoted 0x1F at ` + f["ann.yaml"] + `:3:11 as the number 31: quote it: "0x1F"`}, nil},
		{"--set: the text given", render.ValuesOptions{Values: []string{"driver.instances.a.nodeSelector.x=TRUE"}},
			[]string{`--set reads TRUE as the boolean true: pass it with --set-string 'driver.instances.a.nodeSelector.x=TRUE'`}, nil},
		{"--set overrides the file", render.ValuesOptions{ValueFiles: []string{f["tag.yaml"]}, Values: []string{"driver.image.tag=310"}},
			[]string{`--set reads 310 as the number 310: pass it with --set-string 'driver.image.tag=310'`}, []string{"3.10"}},
		{"--set-json: what it was read as", render.ValuesOptions{JSONValues: []string{"driver.image.tag=3.10"}},
			[]string{`quote it in a values file ("3.1"), or pass it with --set-string 'driver.image.tag=3.1'`}, nil},
		{"a long number is cut", render.ValuesOptions{ValueFiles: []string{f["long.yaml"]}},
			[]string{`YAML reads the unquoted ` + long[:80] + `... (300 bytes) at `}, []string{long[:81]}},
		{"a list gets no quoting hint", render.ValuesOptions{ValueFiles: []string{f["list.yaml"]}},
			[]string{`driver.image.tag: Invalid value: "<list>": must be a string`}, []string{"quote"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := renderWithSources(t, tt.opts)
			var invalid *render.InvalidValuesError
			require.ErrorAs(t, err, &invalid)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			for _, w := range tt.notWant {
				assert.NotContains(t, err.Error(), w)
			}
		})
	}
}
