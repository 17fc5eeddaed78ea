package policy

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
)

// paths lists the documents t reads whole, dotted and sorted ("" for the document itself).
func (t *readTree) paths() []string {
	var out []string
	var walk func(t *readTree, prefix []string)
	walk = func(t *readTree, prefix []string) {
		if t.all {
			out = append(out, strings.Join(prefix, "."))
			return
		}
		for k, next := range t.keys {
			walk(next, append(slices.Clone(prefix), k))
		}
	}
	walk(t, nil)
	slices.Sort(out)
	return out
}

// tree builds a readTree from dotted paths ("" for all of it).
func tree(paths ...string) *readTree {
	t := &readTree{}
	for _, p := range paths {
		if p == "" {
			t.add()
			continue
		}
		t.add(strings.Split(p, ".")...)
	}
	return t
}

// TestInputReads: every way a rule can reach input, through the rules and functions the
// query depends on and nothing else.
func TestInputReads(t *testing.T) {
	for _, c := range []struct {
		name, rules string
		want        []string
	}{
		{"a path", `deny contains "m" if input.object.spec.version == "latest"`, []string{"object.spec.version"}},
		{"two paths", `deny contains "m" if { input.object.spec.version; input.operation == "CREATE" }`, []string{"object.spec.version", "operation"}},
		{"a path inside another", `deny contains "m" if { input.object.spec.a; input.object.spec }`, []string{"object.spec"}},
		{"iteration", `deny contains k if some k, _ in input.object.spec.nodeSelector`, []string{"object.spec.nodeSelector"}},
		{"a variable key", `deny contains k if input.object.metadata.labels[k]`, []string{"object.metadata.labels"}},
		{"a variable then names", `deny contains "m" if input.object.spec.tolerations[_].key == "x"`, []string{"object.spec.tolerations"}},
		{"an index", `deny contains "m" if input.object.spec.tolerations[0].key == "x"`, []string{"object.spec.tolerations"}},
		{"a ref in the path", `deny contains "m" if input.object.spec[input.source]`, []string{"object.spec", "source"}},
		{"input assigned", `deny contains "m" if { x := input; x.object.a }`, []string{""}},
		{"input iterated", `deny contains k if some k, _ in input`, []string{""}},
		{"input walked", `deny contains "m" if { walk(input.object, [p, v]); v == 1 }`, []string{"object"}},
		{"input to a builtin", `deny contains "m" if count(input) > 1`, []string{""}},
		{"object.get of a name", `deny contains "m" if object.get(input.object, "kind", "") == "x"`, []string{"object.kind"}},
		{"object.get of a path", `deny contains "m" if { x := object.get(input.object, ["spec", "nodeSelector"], {}); x.a }`, []string{"object.spec.nodeSelector"}},
		{"object.get of input", `deny contains "m" if object.get(input, ["a"], 1)`, []string{"a"}},
		{"object.get, an empty path", `deny contains "m" if object.get(input.object, [], 1)`, []string{"object"}},
		{"object.get, a number in the path", `deny contains "m" if object.get(input.object, ["spec", 0, "x"], 1)`, []string{"object.spec"}},
		{"object.get, a variable key", `deny contains "m" if { some k in ["a"]; object.get(input.object, k, 1) }`, []string{"object"}},
		{"object.get, a ref key", `deny contains "m" if object.get(input.object, input.key, 1)`, []string{"key", "object"}},
		{"object.get inside a ref", `deny contains "m" if object.get(input.object[input.k], "a", 1)`, []string{"k", "object"}},
		{"object.get default reads", `deny contains "m" if object.get(input.object, "a", input.b)`, []string{"b", "object.a"}},
		{"object.get with", "deny contains \"m\" if object.get(input.object, \"a\", 1) with input.c as 2", []string{"c", "object.a"}},
		{"object.get mocked", "myget(o, k, d) := json.marshal(o)\ndeny contains m if m := object.get(input.object, \"kind\", \"\") with object.get as myget", []string{"object"}},
		{"object.get mocked above it", "myget(o, k, d) := count(o)\nh := object.get(input.object, \"spec\", {})\ndeny contains \"m\" if h with object.get as myget", []string{"object"}},
		{"object.get mocked, an alias", "myget(o, k, d) := count(o)\ndeny contains \"m\" if { x := input.object; object.get(x, \"kind\", \"\") with object.get as myget }", []string{"object"}},
		{"object.get mocked elsewhere", "myget(o, k, d) := count(o)\ndeny contains \"m\" if object.get(input.object, \"kind\", \"\")\nunused if object.get(input, \"a\", 1) with object.get as myget", []string{"object.kind"}},
		{"object.get in a comprehension", `deny contains "m" if count([v | some i in [1]; v := object.get(input.object, ["b", "c"], i)]) > 0`, []string{"object.b.c"}},
		{"input to a function", "deny contains \"m\" if f(input.object.metadata)\nf(x) if x.name", []string{"object.metadata"}},
		{"a function reading input", "deny contains \"m\" if f(1)\nf(x) if input.userInfo.username == x", []string{"userInfo.username"}},
		{"an import", "import input.object.spec as s\ndeny contains \"m\" if s.version", []string{"object.spec.version"}},
		{"import input", "import input as inp\ndeny contains \"m\" if inp.oldObject.spec", []string{"oldObject.spec"}},
		{"with", "deny contains \"m\" if q with input.object.spec.x as 1\nq if input.object.spec.y", []string{"object.spec.x", "object.spec.y"}},
		{"a comprehension", `deny contains "m" if count({k | input.object.metadata.annotations[k]}) > 1`, []string{"object.metadata.annotations"}},
		{"every", `deny contains "m" if every t in input.object.spec.tolerations { t.key }`, []string{"object.spec.tolerations"}},
		{"else", "deny contains \"m\" if v\nv := 1 if input.a else := 2 if input.b", []string{"a", "b"}},
		{"another package", "import data.driverguard.other\ndeny contains \"m\" if other.q", []string{"routing.pools"}},
		{"a dynamic ref", "deny contains \"m\" if data.driverguard.other[\"q\"]", []string{"routing.pools"}},
		{"data only", `deny contains "m" if data.driverguard_config.x`, nil},
		{"not a dependency", "deny contains \"m\" if input.a\nunused if input.oldObject", []string{"a"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			modules := map[string]*ast.Module{
				"t.rego":     ast.MustParseModuleWithOpts("package driverguard.t\n"+c.rules, ast.ParserOptions{RegoVersion: ast.RegoV1}),
				"other.rego": ast.MustParseModuleWithOpts("package driverguard.other\nq if input.routing.pools\nr if input.oldObject", ast.ParserOptions{RegoVersion: ast.RegoV1}),
			}
			comp := newCompiler()
			comp.Compile(modules)
			require.False(t, comp.Failed(), "%v", comp.Errors)
			assert.Equal(t, c.want, inputReads(comp, ast.MustParseRef("data.driverguard.t.deny")).paths())
		})
	}
}

// TestReadTree: adding a path inside one read whole changes nothing; adding one that
// contains others reads them whole.
func TestReadTree(t *testing.T) {
	assert.Equal(t, []string{"a.b"}, tree("a.b", "a.b.c").paths())
	assert.Equal(t, []string{"a"}, tree("a.b.c", "a.d", "a").paths())
	assert.Equal(t, []string{""}, tree("a.b", "").paths())
	assert.Nil(t, tree().paths())
	assert.Nil(t, tree("a.b").member("c"))
	assert.Same(t, readAll, tree("a").member("a").member("x"))
	assert.Nil(t, (*readTree)(nil).member("a"))
}

// restrict is the part of v that t reads.
func restrict(v ast.Value, t *readTree) ast.Value {
	obj, ok := v.(ast.Object)
	if !ok || t.all {
		return v
	}
	var kvs [][2]*ast.Term
	obj.Foreach(func(k, v *ast.Term) {
		if s, ok := k.Value.(ast.String); ok {
			if part := t.member(string(s)); part != nil {
				kvs = append(kvs, [2]*ast.Term{k, ast.NewTerm(restrict(v.Value, part))})
			}
		}
	})
	return ast.NewObject(kvs...)
}

// reviewRequest is what the tests read of an AdmissionReview of test/testdata/review.
type reviewRequest struct {
	text      []byte                     // the whole review
	Object    json.RawMessage            `json:"object"`
	OldObject json.RawMessage            `json:"oldObject"`
	Operation string                     `json:"operation"`
	UserInfo  *authenticationv1.UserInfo `json:"userInfo"`
}

// reviewRequests are the requests of test/testdata/review.
func reviewRequests(t *testing.T) []reviewRequest {
	t.Helper()
	files, err := filepath.Glob("../test/testdata/review/requests/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := make([]reviewRequest, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var review struct {
			Request reviewRequest `json:"request"`
		}
		require.NoError(t, json.Unmarshal(b, &review), f)
		review.Request.text = b
		out = append(out, review.Request)
	}
	return out
}

// partTrees are the trees the rawPart tests cut texts with.
func partTrees() []*readTree {
	return []*readTree{tree(), tree(""), tree("a"), tree("a.b"), tree("a.b", "d"), tree("x"), tree("ab.b"), tree(""),
		tree("kind", "spec.nodeSelector", "spec.version", "metadata.name"), tree("object.spec.registry", "object.kind")}
}

// assertSamePart: rawPart is OPA's conversion cut to the tree, or both are an error.
func assertSamePart(t *testing.T, raw []byte, reads *readTree) {
	t.Helper()
	want, wantErr := opaValue(raw)
	got, err := rawPart(raw, reads)
	if wantErr != nil {
		assert.Error(t, err, "%q %v", raw, reads.paths())
		return
	}
	require.NoError(t, err, "%q %v", raw, reads.paths())
	want, got = restrict(want, reads), restrict(got, reads)
	assert.Equal(t, 0, ast.Compare(want, got), "%q %v:\n want %v\n  got %v", raw, reads.paths(), want, got)
}

// TestRawPartIsOPAsConversionCut: what rawPart leaves out is checked all the same (a huge
// number, a duplicate name, malformed text or deep nesting in a member no rule reads still
// fail), and what it keeps is OPA's conversion.
func TestRawPartIsOPAsConversionCut(t *testing.T) {
	cases := append(rawValueCases(), `{"a":{"b":1,"c":1e40000}}`, `{"x":1,"a":{"b":2},"x":3}`, `{"\u0061b":{"b":[1]},"d":{"e":"\ud800"}}`,
		`{"a":{"b":{"c":[1,{"d":null}]}},"z":[1,2,{"y":`+strings.Repeat("[", maxRawDepth+5)+strings.Repeat("]", maxRawDepth+5)+`}]}`,
		`{"a":{"b":1},"q":{"w":1e400}}`, `{"a":"s","b":{}}`, `{"a":[{"b":1}]}`)
	for _, r := range reviewRequests(t) {
		cases = append(cases, string(r.text), string(r.Object))
	}
	for _, c := range cases {
		for _, reads := range partTrees() {
			assertSamePart(t, []byte(c), reads)
		}
	}
}

// FuzzRawPart: on any text and every tree, rawPart is OPA's conversion cut to the tree.
func FuzzRawPart(f *testing.F) {
	for _, c := range rawValueCases() {
		f.Add([]byte(c))
	}
	f.Add([]byte(`{"a":{"b":1,"c":1e40000},"x":[1,{"y":2}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, reads := range partTrees() {
			assertSamePart(t, raw, reads)
		}
	})
}

// readsCorpus is a package whose rules reach input every way TestInputReads lists, each
// message echoing what it read, so that a missing part of input changes the decision.
const readsCorpus = `package driverguard.reads

import input.object.spec as spec

deny contains sprintf("version %v", [input.object.spec.version]) if input.object.spec.version
deny contains sprintf("selector %s=%s", [k, v]) if some k, v in input.object.spec.nodeSelector
deny contains sprintf("label %s", [k]) if input.object.metadata.labels[k]
deny contains sprintf("toleration %v", [t]) if some t in input.object.spec.tolerations
deny contains sprintf("first toleration %v", [input.object.spec.tolerations[0]]) if count(input.object.spec.tolerations) > 0
deny contains sprintf("smd %s", [json.marshal(spec.smd)]) if spec.smd
deny contains sprintf("old %s", [json.marshal(input.oldObject.spec)]) if input.oldObject
deny contains sprintf("user %v", [input.userInfo.groups]) if input.userInfo.groups
deny contains sprintf("op %s", [input.operation]) if startswith(input.operation, "UP")
warn contains sprintf("manager %v", [m]) if m := object.get(input.object, ["spec", "manager"], "none")
warn contains sprintf("leaves %d", [count([v | walk(input.object.metadata, [_, v])])])
warn contains sprintf("annotations %d", [count({k | input.object.metadata.annotations[k]})])
warn contains sprintf("smd image %v", [object.get(input.object, ["spec", "smd", "image"], "none")])
warn contains sprintf("metadata %v", [object.get(input.object, "metadata", "none")])
warn contains sprintf("alias twice %v %v", [object.get(input.object, "kind", 0), object.get(input.object, ["spec", "registry"], 0)])
warn contains "all kernel-tag" if every t in object.get(input.object.spec, "tolerations", []) { t.operator == "Exists" }
warn contains sprintf("with %v", [x]) if x := q with input.object.spec.registry as "r.example"

q := input.object.spec.registry
`

// TestInputReadsKeepDecisions: the engine's decisions with the input cut to what the policies
// read equal those with the whole input, for the bundled library, a package that reads input
// every way, and the three checks of the side-by-side harness, on every admission request of
// test/testdata/review and variants of them.
func TestInputReadsKeepDecisions(t *testing.T) {
	perf := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(perf, "perf.rego"), []byte(`package driverguard.perf

deny contains "moving tag" if input.object.spec.version in {"latest", "stable", "main"}
deny contains "registry" if not startswith(input.object.spec.registry, "repo.example")
deny contains k if { some k, _ in input.object.spec.nodeSelector; startswith(k, "rebellions.ai/npu.driver.") }
`), 0o600))
	corpus := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(corpus, "reads.rego"), []byte(readsCorpus), 0o600))
	whole := t.TempDir() // a rule that reads input.object whole, with the rest
	require.NoError(t, os.WriteFile(filepath.Join(whole, "dynamic.rego"), []byte(`package driverguard.dynamic

warn contains sprintf("dynamic %v", [input.object[key]]) if some key in ["kind", "apiVersion"]
`), 0o600))
	var inputs []*Input
	for _, r := range reviewRequests(t) {
		in := &Input{Object: r.Object, Operation: r.Operation, Source: SourceAdmission, UserInfo: r.UserInfo}
		if len(r.OldObject) > 0 && string(r.OldObject) != "null" {
			in.OldObject = r.OldObject
		}
		inputs = append(inputs, in, &Input{Object: r.Object, Operation: "UPDATE", OldObject: r.Object, Source: SourceRender,
			UserInfo: &authenticationv1.UserInfo{Groups: []string{"g"}}})
	}
	inputs = append(inputs,
		&Input{Object: json.RawMessage(`{"kind":"RBLNDriver","metadata":{"name":"x","labels":{"a":"b"},"annotations":{"c":"d","e":"f"}},` +
			`"spec":{"version":"latest","registry":"r","nodeSelector":{"rebellions.ai/npu.driver.x":"y"},"tolerations":[{"key":"k","operator":"Exists"}],"smd":{"image":"i"},"manager":{"version":"v1"}}}`),
			Operation: "CREATE"},
		&Input{Object: json.RawMessage(`{"kind":"RBLNDriver","spec":"not an object","metadata":[1,2]}`), Operation: "CREATE"},
		&Input{Object: json.RawMessage(`{"kind":"RBLNClusterPolicy","spec":{"tolerations":[]}}`)},
		&Input{Object: json.RawMessage(`null`)},
		&Input{})
	for _, old := range unreadableObjects() {
		inputs = append(inputs, &Input{Object: json.RawMessage(`{"kind":"RBLNDriver","metadata":{"name":"d"},"spec":{"version":"latest"}}`), Operation: "UPDATE", OldObject: old})
	}
	mocked := t.TempDir() // object.get replaced by a function that sees its whole first argument
	require.NoError(t, os.WriteFile(filepath.Join(mocked, "mocked.rego"), []byte(`package driverguard.mocked

myget(o, k, d) := json.marshal(o)

count_get(o, k, d) := count(o)

helper := object.get(input.object, "spec", {})

deny contains m if m := object.get(input.object, "kind", "") with object.get as myget

warn contains sprintf("n=%v", [x]) if x := helper with object.get as count_get

warn contains m if {
	x := input.object
	m := object.get(x, "metadata", "") with object.get as myget
}
`), 0o600))
	for name, opts := range map[string]Options{
		"object.get mocked":          {Dirs: []string{mocked}, ExcludeLibrary: true},
		"library, object.get mocked": {Dirs: []string{mocked}},
		"library":                    {},
		"corpus":                     {Dirs: []string{corpus}, ExcludeLibrary: true},
		"3 checks":                   {Dirs: []string{perf}, ExcludeLibrary: true},
		"all":                        {Dirs: []string{corpus, perf, whole}},
	} {
		t.Run(name, func(t *testing.T) {
			opts.Metrics = prometheus.NewRegistry()
			cut, err := New(t.Context(), opts)
			require.NoError(t, err)
			opts.Metrics = prometheus.NewRegistry()
			whole, err := New(t.Context(), opts)
			require.NoError(t, err)
			require.NotEqual(t, []string{""}, cut.active.Load().inputReads.paths(), "the input is not cut")
			whole.active.Load().inputReads = readAll
			fired := 0
			for i, in := range inputs {
				want, wantErr := whole.Evaluate(t.Context(), in)
				got, err := cut.Evaluate(t.Context(), in)
				if wantErr != nil {
					assert.Error(t, err, "input %d", i)
					continue
				}
				require.NoError(t, err, "input %d", i)
				assert.Equal(t, want, got, "input %d: %s", i, in.Object)
				fired += len(want.Deny) + len(want.Warn)
			}
			assert.Positive(t, fired, "no rule fired: the comparison shows nothing")
		})
	}
}

// unreadableObjects are objects whose conversion fails: a number OPA refuses, truncated text,
// no text, a Go value with no JSON form.
func unreadableObjects() []any {
	return []any{json.RawMessage(`{"kind":"RBLNDriver","spec":{"n":1e999999}}`), json.RawMessage(`{"kind":`), json.RawMessage(nil),
		map[string]any{"x": math.NaN()}, json.RawMessage(`{"kind":"RBLNDriver","status":{"n":1e999999}}`)}
}

// TestUnreadObjectsAreStillChecked: an object or old object that no policy reads (or reads a
// part of) fails the evaluation when its conversion would, as it did when it was converted
// whole.
func TestUnreadObjectsAreStillChecked(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.rego"), []byte("package driverguard.p\n\ndeny contains \"v\" if input.object.spec.version == \"latest\"\n"), 0o600))
	e, err := New(t.Context(), Options{Dirs: []string{dir}, ExcludeLibrary: true, Metrics: prometheus.NewRegistry()})
	require.NoError(t, err)
	require.Equal(t, []string{"object.kind", "object.spec.version"}, e.active.Load().inputReads.paths())
	good := json.RawMessage(`{"kind":"RBLNDriver","spec":{"version":"latest"}}`)
	d, err := e.Evaluate(t.Context(), &Input{Object: good, OldObject: good, Operation: "UPDATE"})
	require.NoError(t, err)
	require.Len(t, d.Deny, 1)
	for i, bad := range unreadableObjects() {
		_, err := e.Evaluate(t.Context(), &Input{Object: good, OldObject: bad, Operation: "UPDATE"})
		assert.ErrorContains(t, err, "input.oldObject", "old object %d", i)
		_, err = e.Evaluate(t.Context(), &Input{Object: bad, Operation: "CREATE"})
		assert.ErrorContains(t, err, "input.object", "object %d", i)
	}
}
