package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const header = "apiVersion: driverguard.rebellions.ai/v1alpha1\nkind: TestSuite\n"

func writeSuiteFile(t *testing.T, content string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "v.yaml"), []byte("driver: {}\n"), 0o600))
	path := filepath.Join(dir, "a.dgtest.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestLoadErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		content string
		line    int
		msg     string
	}{
		"empty":           {"", 0, "empty: a suite needs apiVersion, kind and tests"},
		"not a suite":     {"apiVersion: v1\nkind: ConfigMap\n", 1, "not a suite"},
		"no tests":        {header, 1, "no tests"},
		"unknown top key": {header + "test: []\n", 3, `unknown field "test" in the suite; it takes: apiVersion, kind, policies, library, coverageOf, inventory, tests`},
		"unknown inventory key": {header + "inventory:\n  node: v.yaml\ntests: []\n", 4,
			`unknown field "node" in an inventory; it takes: nodes, drivers, clusterPolicy, pods`},
		"no name":         {header + "tests:\n  - values: [v.yaml]\n    expect: {verdict: allowed}\n", 4, "test 1 has no name"},
		"duplicate name":  {header + "tests:\n  - name: a\n    values: [v.yaml]\n    expect: {verdict: allowed}\n  - name: a\n    values: [v.yaml]\n    expect: {verdict: allowed}\n", 7, `test "a" is also defined at line 4`},
		"two inputs":      {header + "tests:\n  - name: a\n    values: [v.yaml]\n    review: r.json\n    expect: {verdict: allowed}\n", 4, "give exactly one of values, objects or review (2 given)"},
		"no input":        {header + "tests:\n  - name: a\n    expect: {verdict: allowed}\n", 4, "(0 given)"},
		"set alone":       {header + "tests:\n  - name: a\n    set: [a=b]\n    objects: v.yaml\n    expect: {verdict: allowed}\n", 4, "set needs values"},
		"expects nothing": {header + "tests:\n  - name: a\n    values: [v.yaml]\n", 4, "expects nothing"},
		"bad verdict":     {header + "tests:\n  - name: a\n    values: [v.yaml]\n    expect: {verdict: deny}\n", 4, `expect.verdict "deny": want denied or allowed`},
		"bad object":      {header + "tests:\n  - name: a\n    values: [v.yaml]\n    expect:\n      results:\n        - {object: rbln-driver, rule: X, result: fail}\n", 8, "want Kind/name"},
		"missing inventory file": {header + "inventory:\n  nodes: [v.yaml, nodes.yaml]\ntests:\n  - name: a\n    values: [v.yaml]\n    expect: {verdict: allowed}\n", 4,
			"nodes.yaml does not exist (paths are relative to the suite file)"},
		"null path":              {header + "tests:\n  - name: a\n    values: [~]\n    expect: {verdict: allowed}\n", 5, "an empty (null) list entry"},
		"update without objects": {header + "tests:\n  - name: a\n    values: [v.yaml]\n    operation: UPDATE\n    expect: {verdict: allowed}\n", 4, "operation applies to objects"},
		"not yaml":               {header + "tests: [\n", 3, "did not find expected node content"},
		"second document": {header + "tests:\n  - name: a\n    values: [v.yaml]\n    expect: {verdict: allowed}\n---\n" + header + "tests: []\n", 7,
			"a second YAML document: a suite file holds one TestSuite"},
		"not a mapping":                    {"root:x:0:0\n", 1, "cannot unmarshal !!str `root:x:0:0` where the suite belongs"},
		"values is a folder":               {header + "tests:\n  - name: a\n    values: [.]\n    expect: {verdict: allowed}\n", 5, ". is a folder: name the files"},
		"bad set":                          {header + "tests:\n  - name: a\n    values: [v.yaml]\n    set: [\"driver.image.tag\"]\n    expect: {verdict: allowed}\n", 4, `set "driver.image.tag": key "tag" has no value`},
		"bad coverageOf glob":              {header + "coverageOf:\n  - driverguard.team.*\n  - \"driverguard.[team\"\ntests:\n  - name: a\n    values: [v.yaml]\n    expect: {verdict: allowed}\n", 5, `coverageOf: "driverguard.[team" is not a glob`},
		"coverageOf not a list of strings": {header + "coverageOf: [{a: b}]\ntests:\n  - name: a\n    values: [v.yaml]\n    expect: {verdict: allowed}\n", 3, "want a rule ID or a glob on rule IDs"},
		"a mapping too large":              {header + "tests: []\nx: {" + manyKeys(MaxMappingKeys+1) + "}\n", 4, "a mapping of 10001 keys: a suite's mappings hold at most 10000"},
		"aliases expanded": {header + "a: &a [" + strings.Repeat("x, ", 5000) + "x]\nb: [" + strings.Repeat("*a, ", 300) + "*a]\ntests: []\n", 3,
			"YAML nodes (aliases counted at each use)"},
	} {
		t.Run(name, func(t *testing.T) {
			path := writeSuiteFile(t, tc.content)
			_, err := Load(path)
			var se *Error
			require.ErrorAs(t, err, &se)
			assert.Equal(t, path, se.File)
			assert.Equal(t, tc.line, se.Line, se.Error())
			assert.Contains(t, se.Msg, tc.msg)
		})
	}
}

func TestLoadObjects(t *testing.T) {
	path := writeSuiteFile(t, header+`inventory:
  nodes:
    - v.yaml
    - {apiVersion: v1, kind: Node, metadata: {name: n1}}
tests:
  - name: a
    objects: {apiVersion: rebellions.ai/v1alpha1, kind: RBLNDriver, metadata: {name: d}}
    expect:
      verdict: allowed
      results:
        - {object: RBLNDriver/d, rule: X, result: pass}
`)
	s, err := Load(path)
	require.NoError(t, err)
	require.Len(t, s.Inventory.Nodes.Files, 1)
	assert.Equal(t, 5, s.Inventory.Nodes.Files[0].Line)
	require.Len(t, s.Inventory.Nodes.Inline, 1)
	assert.Equal(t, "Node", s.Inventory.Nodes.Inline[0]["kind"])
	require.Len(t, s.Tests, 1)
	assert.Equal(t, 8, s.Tests[0].Line)
	assert.Len(t, s.Tests[0].Objects.Inline, 1)
	assert.Equal(t, 13, s.Tests[0].Expect.Results[0].Line)
	assert.True(t, s.WithLibrary())
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.dgtest.yaml", "sub/b.dgtest.yaml", ".hidden/c.dgtest.yaml", "sub/values.yaml"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o600))
	}
	got, err := Find([]string{dir, filepath.Join(dir, "a.dgtest.yaml")})
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "a.dgtest.yaml"), filepath.Join(dir, "sub/b.dgtest.yaml")}, got)
	_, err = Find([]string{filepath.Join(dir, "sub", "nothing")})
	require.Error(t, err)
	empty := t.TempDir()
	_, err = Find([]string{empty})
	require.ErrorContains(t, err, "no *.dgtest.yaml file")
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%d: 1, ", i)
	}
	return b.String()
}

// TestFindOnce: a suite reached twice (relative and absolute, or through a symlink) is found
// once; "-" in a suite is a file, never standard input.
func TestFindOnce(t *testing.T) {
	path := writeSuiteFile(t, header+"tests: []\n")
	abs, err := filepath.Abs(path)
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), "link.dgtest.yaml")
	require.NoError(t, os.Symlink(path, link))
	found, err := Find([]string{path, abs, link, filepath.Dir(path)})
	require.NoError(t, err)
	assert.Len(t, found, 1, "%v", found)

	s := &Suite{Dir: "."}
	assert.Equal(t, "./-", filepath.ToSlash(s.Resolve(Path{Value: "-"})))
	assert.Equal(t, "./-", filepath.ToSlash(s.Resolve(Path{Value: "./-"})))
}
